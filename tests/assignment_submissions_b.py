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

# The guard refuses by code (issue 38 item 3, the hunt's rows 32-39), in two submissions: each part answered by the
# package's (or timm's, scipy's) code run under another function object -- re-made from saved code objects, run
# again from its file -- or by a ready-made routine the lists now name. Each would be right if it ran.
REMADE = ("import sys\n"
          "import types\n"
          "\n"
          "def remade(*modules):\n"
          "    spaces = {m.__name__: dict(vars(m)) for m in modules}\n"
          "    made = {}\n"
          "    for m in modules:\n"
          "        for key, value in vars(m).items():\n"
          "            if isinstance(value, types.FunctionType) and value.__globals__ is vars(m):\n"
          "                new = types.FunctionType(value.__code__, spaces[m.__name__], value.__name__,\n"
          "                                         value.__defaults__, value.__closure__)\n"
          "                new.__kwdefaults__ = value.__kwdefaults__\n"
          "                made[id(value)] = new\n"
          "    for space in spaces.values():\n"
          "        for key, value in list(space.items()):\n"
          "            if id(value) in made:\n"
          "                space[key] = made[id(value)]\n"
          "    return spaces\n"
          "\n")
AUTHORS_WITH = ("def authors_resize_pos_embed(pos_embed, old_grid, new_grid):\n"
                "    (h, w), (new_h, new_w) = old_grid, new_grid\n"
                "    grid = pos_embed[0, 1:].detach().reshape(h, w, -1).double().numpy()\n"
                "    zoomed = torch.from_numpy(zoom_grid(grid, new_h, new_w)).to(pos_embed.dtype)\n"
                "    return torch.cat([pos_embed[:, :1], zoomed.reshape(1, new_h * new_w, -1)], dim=1)\n")
FINE_TUNE_WITH = ("def fine_tune(model, images, labels, steps, batch_size, lr, generator):\n"
                  "    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
                  "    model.train()\n"
                  "    losses = []\n"
                  "    for _ in range(steps):\n"
                  "        idx = torch.randint(len(images), (batch_size,), generator=generator)\n"
                  "        loss, _, _ = step(model, optimizer, images[idx], labels[idx], clip_grad=None)\n"
                  "        losses.append(loss.item())\n"
                  "    model.eval()\n"
                  "    return losses\n")
SUBMISSIONS.update({
    # rows 33, 34, 37, 39: minivit.embeddings re-made (resize_pos_embed); ViT.set_image_size's saved code on a copy;
    # scipy.ndimage's zoom re-made, keyword-only defaults kept; every loaded minivit.train module re-made, wired
    "code-saved": ({
        "resize": REMADE + ("import minivit.embeddings\n"
                            "my_resize_pos_embed = remade(minivit.embeddings)['minivit.embeddings']['resize_pos_embed']\n"),
        "model": ("import minivit.vit\n"
                  "set_size = types.FunctionType(minivit.ViT.set_image_size.__code__, vars(minivit.vit))\n"
                  "\n"
                  "def at_resolution(model, image_size):\n"
                  "    return set_size(copy.deepcopy(model), image_size).eval()\n"),
        "authors": ("import scipy.ndimage._interpolation as interpolation\n"
                    "zoom = remade(interpolation)[interpolation.__name__]['zoom']\n"
                    "\n"
                    "def zoom_grid(grid, new_h, new_w):\n"
                    "    return zoom(grid, (new_h / grid.shape[0], new_w / grid.shape[1], 1), order=1)\n"
                    "\n" + AUTHORS_WITH),
        "finetune": ("import minivit.train.loop\n"
                     "train = [m for name, m in list(sys.modules.items()) if name.startswith('minivit.train.')]\n"
                     "step = remade(*train)['minivit.train.loop']['train_step']\n"
                     "\n" + FINE_TUNE_WITH),
    }, {"resize", "model", "authors", "finetune"}),
    # rows 32, 35, 38: timm's resample_abs_pos_embed; scipy's C routine under zoom; minivit.train.loop run again
    # from its file. Part 2 is right and keeps its points.
    "code-private": ({
        "resize": ("import timm.layers\n"
                   "\n"
                   "def my_resize_pos_embed(pos_embed, old_grid, new_grid):\n"
                   "    return timm.layers.resample_abs_pos_embed(pos_embed, list(new_grid), list(old_grid),\n"
                   "                                              num_prefix_tokens=1)\n"),
        "authors": ("import numpy as np\n"
                    "from scipy.ndimage import _nd_image, _ni_support\n"
                    "\n"
                    "def zoom_grid(grid, new_h, new_w):\n"
                    "    h, w, d = grid.shape\n"
                    "    output = np.zeros((new_h, new_w, d))\n"
                    "    zoom = np.ascontiguousarray([(h - 1) / (new_h - 1), (w - 1) / (new_w - 1), 1.0])\n"
                    "    _nd_image.zoom_shift(grid, zoom, None, output, 1, _ni_support._extend_mode_to_code('constant'),\n"
                    "                         0.0, 0, False)\n"
                    "    return output\n"
                    "\n" + AUTHORS_WITH),
        "finetune": ("import importlib.util\n"
                     "\n"
                     "spec = importlib.util.find_spec('minivit.train.loop')\n"
                     "again = importlib.util.module_from_spec(spec)\n"
                     "spec.loader.exec_module(again)\n"
                     "step = again.train_step\n"
                     "\n" + FINE_TUNE_WITH),
    }, {"resize", "authors", "finetune"}),
})

# The hunt's R1 and W8 in one submission: part 4 right, with a plain tqdm bar on stderr over its steps (R1 scored
# 0/3 when stderr reached the test cells; the checks show it on stdout, so part 4 keeps all its points); part 1 with
# the grid's height and width swapped, right on square grids only (W8: every check has a non-square case, so part 1
# loses all its points). Parts 2 and 3 are right.
SUBMISSIONS["tqdm-and-square-only"] = ({
    "finetune": ("    for _ in range(steps):\n", "    from tqdm import tqdm\n    for _ in tqdm(range(steps)):\n"),
    "resize": ('grid = rearrange(patches, "1 (h w) d -> 1 d h w", h=h, w=w)',
               'grid = rearrange(patches, "1 (h w) d -> 1 d h w", h=w, w=h)'),
}, {"resize"})
