"""Submissions to assignment B (tests/test_assignments.py): plausible mistakes and attempts to call the package's
or scipy's own solution. student -> ({solution cell: (anchor, replacement), a list of them or a whole new source}, the
parts that lose all their points). Every other part keeps all of its points: part 2 is graded with the reference part 1.
Each submission costs one run of the notebook (35-55 s measured on one thread)."""

SUBMISSIONS = {
    # part 1 with the corners aligned (the authors' convention); part 3 with the centres aligned (timm's);
    # part 4 without optimizer.zero_grad(), so that the gradients accumulate. Part 2 is right (a tqdm bar on stderr
    # besides) and keeps its points.
    "mistakes": ({
        "resize": ("align_corners=False", "align_corners=True"),
        "authors": ("align_corners=True", "align_corners=False"),
        "finetune": ("        optimizer.zero_grad()\n", ""),
        # part 2 right, with a tqdm bar on stderr (the hunt's R1, a tqdm bar in a correct fine_tune, cost 0/3):
        # shown on stdout by the checks, so it keeps its points
        "model": ("    state = {k: v.detach().clone() for k, v in model.state_dict().items()}",
                  "    from tqdm import tqdm\n"
                  "    state = {k: v.detach().clone() for k, v in tqdm(model.state_dict().items(), desc='copying')}"),
    }, {"resize", "authors", "finetune"}),
    # each part done by the package's (or scipy's) solution: a default argument, ViT.set_image_size on a copy,
    # functools.partial, the package's training step. Each would be right if it were allowed to run.
    "bypass": ({
        "resize": ("def my_resize_pos_embed(pos_embed, old_grid, new_grid, _impl=minivit.resize_pos_embed):\n"
                   "    return _impl(pos_embed, old_grid, new_grid)\n"),
        "model": ("def at_resolution(model, image_size):\n"
                  "    return copy.deepcopy(model).set_image_size(image_size).eval()\n"),
        "authors": ("import scipy.ndimage\n"
                    "zoom_linear = functools.partial(scipy.ndimage.zoom, order=1)\n"
                    "\n"
                    "def authors_resize_pos_embed(pos_embed, old_grid, new_grid):\n"
                    "    (h, w), (new_h, new_w) = old_grid, new_grid\n"
                    "    grid = pos_embed[0, 1:].detach().reshape(h, w, -1).double().numpy()\n"
                    "    zoomed = torch.from_numpy(zoom_linear(grid, (new_h / h, new_w / w, 1))).to(pos_embed.dtype)\n"
                    "    return torch.cat([pos_embed[:, :1], zoomed.reshape(1, new_h * new_w, -1)], dim=1)\n"),
        "finetune": ("from minivit.train.loop import train_step\n"
                     "\n"
                     "def fine_tune(model, images, labels, steps, batch_size, lr, generator):\n"
                     "    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
                     "    model.train()\n"
                     "    losses = []\n"
                     "    for _ in range(steps):\n"
                     "        idx = torch.randint(len(images), (batch_size,), generator=generator)\n"
                     "        loss, _, _ = train_step(model, optimizer, images[idx], labels[idx], clip_grad=None)\n"
                     "        losses.append(loss.item())\n"
                     "    model.eval()\n"
                     "    return losses\n"),
    }, {"resize", "model", "authors", "finetune"}),
    # Part 4 trains, but not as the task says (the hunt's W12-W15, which kept 2 or 3 of its 3 points when only a loop
    # on one repeated image and the gain of 30 steps were checked): each must lose all of part 4. The first also
    # answers part 3 with the package's reference of it (minivit.references, which the release names but does not
    # spell out).
    "weight-decay": ({
        "finetune": ("momentum=0.9)", "momentum=0.9, weight_decay=5e-4)"),
        "authors": ("from minivit.references import authors_resize\n"
                    "\n"
                    "def authors_resize_pos_embed(pos_embed, old_grid, new_grid):\n"
                    "    return authors_resize(pos_embed, old_grid, new_grid)\n"),
    }, {"finetune", "authors"}),
    "new-optimizer-each-step": ({
        "finetune": ("        idx = torch.randint",
                     "        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
                     "        idx = torch.randint"),
    }, {"finetune"}),
    "cosine-schedule": ({
        "finetune": [("    model.train()\n",
                      "    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)\n"
                      "    model.train()\n"),
                     ("        optimizer.step()\n", "        optimizer.step()\n        schedule.step()\n")],
    }, {"finetune"}),
    "no-draw": ({
        "finetune": ("idx = torch.randint(len(images), (batch_size,), generator=generator)",
                     "idx = torch.arange(batch_size)"),
    }, {"finetune"}),
}

# The hunt's row 25 (issue 38 item 2): an input transformer in the first answer cell, which made every later cell,
# test cells included, run `pass`. The grading kernel's keeper refuses every cell after it: all four parts lost.
SUBMISSIONS["fake-transformer"] = ({
    "resize": ("def my_resize_pos_embed(", "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])"
                                           "\n\ndef my_resize_pos_embed("),
}, {"resize", "model", "authors", "finetune"})
