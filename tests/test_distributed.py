"""Two CPU processes (gloo) train with fit under DistributedDataParallel: ranks must agree exactly,
and the result must equal one process training on the same global batches."""
import os
import socket
from dataclasses import replace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from minivit.checkpoint import read_checkpoint
from minivit.config import ViTConfig
from minivit.train import evaluate, fit
from minivit.vit import ViT

TINY = ViTConfig(image_size=8, patch_size=4, in_channels=3, num_classes=3, dim=16, depth=1, heads=2, mlp_dim=32)
KW = dict(epochs=2, batch_size=16, lr=3e-3, warmup_epochs=0.5, device="cpu", seed=0, progress=False)


def synthetic(n=50):  # 50 is not a multiple of 16 or of 2 ranks x 16: exercises padding and a short last batch
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(n) % 3
    images = torch.randint(0, 100, (n, 3, 8, 8), generator=g)
    images[torch.arange(n), labels] += 120
    return images.to(torch.uint8), labels


def _worker(rank, world, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(rank)  # different initial weights per rank: DDP must broadcast rank 0's
        model = ViT(TINY) if rank else (torch.manual_seed(0), ViT(TINY))[1]
        x, y = synthetic()
        h = fit(model, (x, y), (x[:20], y[:20]), checkpoint=os.path.join(out_dir, f"ckpt{rank}.pt"), **KW)
        final = evaluate(model, (x, y), batch_size=8, distributed=True)
        torch.save({"state": model.state_dict(), "history": h.to_dict(), "final": final},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed not available")
def test_two_cpu_ranks_agree_and_match_one_process(tmp_path):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1))
    for name, a in r0["state"].items():  # identical parameters on both ranks, to the bit
        torch.testing.assert_close(a, r1["state"][name], rtol=0, atol=0, msg=name)
    for key in ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "lr"):  # not the timings
        assert r0["history"][key] == r1["history"][key], key  # metrics all-reduced: both ranks agree
    assert r0["final"] == r1["final"] and r0["final"]["n"] == 50
    assert (tmp_path / "ckpt0.pt").exists() and not (tmp_path / "ckpt1.pt").exists()  # only rank 0 writes
    assert read_checkpoint(tmp_path / "ckpt0.pt")["run"]["world_size"] == 2

    # One process, same seed and the same global batches (the data padded to 52 like DistributedSampler does):
    # DDP averages the two shards' gradients, which is the gradient of the whole batch.
    torch.manual_seed(0)
    single = ViT(TINY)
    x, y = synthetic()
    h = fit(single, (x, y), (x[:20], y[:20]), **KW)
    assert h.val_acc == pytest.approx(r0["history"]["val_acc"], abs=0.051)  # one image of 20 may flip
    for name, a in single.state_dict().items():
        torch.testing.assert_close(a, r0["state"][name], rtol=1e-3, atol=1e-3, msg=name)
