"""Submissions to assignment C (tests/test_assignments.py): plausible mistakes and attempts to call the package's own
solution. student -> ({solution cell: (anchor, replacement) or a whole new source}, the parts that lose all their
points). Every other part keeps all of its points: parts 3 and 4 are graded without the student's part 1.
Three submissions, each one more run of the notebook in the harness."""

SUBMISSIONS = {
    # part 1 multiplies the layers as Ã1 Ã2 ... ÃL (later layers on the right); part 3 reads the patch index
    # column-major (r = n % h, c = n // h), which a square grid or symmetric picks cannot see. Parts 2 and 4 are
    # right, and warn.
    "mistakes-1": ({
        "rollout": ("joint = a if joint is None else a @ joint", "joint = a if joint is None else joint @ a"),
        "hide": ('rearrange(keep, "b (gh gw) -> b 1 gh gw"', 'rearrange(keep, "b (gw gh) -> b 1 gh gw"'),
        # parts 2 and 4 right, with torch.meshgrid(a, b) and no indexing= (the default, "ij", is right): PyTorch
        # warns on stderr, which cost the hunt's R3 a point; the checks show it on stdout, and both keep their points
        "distance": (', indexing="ij")', ")"),
        "centre": (', indexing="ij")', ")"),
    }, {"rollout", "hide"}),
    # part 2 with the L1 distance between patch centres instead of the Euclidean one; part 4 measured from the
    # patches' top-left corners (no + 0.5); part 3 taking the first score for [class]'s, so that patch 0 is never
    # hidden (the hunt's W22, which no case saw: now patch 0, and the last patch, score highest in a case of each
    # check).
    "mistakes-2": ({
        "distance": ("torch.cdist(centres, centres)", "torch.cdist(centres, centres, p=1)"),
        "centre": ("torch.arange(h) + 0.5, torch.arange(w) + 0.5", "torch.arange(h), torch.arange(w)"),
        "hide": ("keep.scatter_(1, scores.topk(k, dim=1).indices, 0.0)",
                 "keep.scatter_(1, scores[:, 1:].topk(k, dim=1).indices + 1, 0.0)"),
    }, {"distance", "centre", "hide"}),
    # parts 1 and 2 done by the package's own functions, held where a renaming guard would not look: a default
    # argument and a functools.partial; part 3 by the reference the comparison after part 4 uses
    # (minivit.references, which the release names but does not spell out). Each would be right if it were allowed
    # to run.
    "bypass": ({
        "rollout": ("def rollout(maps, _r=minivit.attention_rollout):\n"
                    "    return _r(maps)\n"),
        "distance": ("import functools\n"
                     "\n"
                     "mean_distance = functools.partial(minivit.mean_attention_distance)\n"),
        "hide": ("from minivit.references import hide_highest\n"
                 "\n"
                 "def hide_patches(images, scores, k, patch_size):\n"
                 "    return hide_highest(images, scores, k, patch_size)\n"),
    }, {"rollout", "distance", "hide"}),
}

# The hunt's row 26 (issue 38 item 2): an input transformer in the first answer cell, which made every later cell,
# test cells included, run `pass`. The grading kernel's keeper refuses every cell after it: all four parts lost.
SUBMISSIONS["fake-transformer"] = ({
    "rollout": ("def rollout(", "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])"
                                "\n\ndef rollout("),
}, {"rollout", "distance", "hide", "centre"})

# The guard refuses by code (issue 38 item 3, the hunt's rows 40-42): minivit.inspection re-made from saved code
# objects (attention_rollout) and run again from its file (mean_attention_distance); minivit.patching re-made from
# saved code (unpatchify), with minivit.patchify. Each would be right if it ran, and loses its part.
SUBMISSIONS["code"] = ({
    "rollout": ("import types\n"
                "import minivit.inspection\n"
                "\n"
                "def remade(module):\n"
                "    space = dict(vars(module))\n"
                "    for key, value in vars(module).items():\n"
                "        while getattr(value, '__wrapped__', None) is not None:\n"
                "            value = value.__wrapped__\n"
                "        if isinstance(value, types.FunctionType) and value.__globals__ is vars(module):\n"
                "            space[key] = types.FunctionType(value.__code__, space, value.__name__, value.__defaults__,\n"
                "                                            value.__closure__)\n"
                "    return space\n"
                "\n"
                "rollout = remade(minivit.inspection)['attention_rollout']\n"),
    "distance": ("import importlib.util\n"
                 "\n"
                 "spec = importlib.util.find_spec('minivit.inspection')\n"
                 "again = importlib.util.module_from_spec(spec)\n"
                 "spec.loader.exec_module(again)\n"
                 "mean_distance = again.mean_attention_distance\n"),
    "hide": ("import minivit.patching\n"
             "unpatchify = remade(minivit.patching)['unpatchify']\n"
             "\n"
             "def hide_patches(images, scores, k, patch_size):\n"
             "    patches = minivit.patchify(images, patch_size)  # (B, N, P*P*C)\n"
             "    keep = torch.ones_like(scores).scatter_(1, scores.topk(k, dim=1).indices, 0.0)  # (B, N)\n"
             "    return unpatchify(patches * keep[..., None], patch_size, tuple(images.shape[-2:]))\n"),
}, {"rollout", "distance", "hide"})
