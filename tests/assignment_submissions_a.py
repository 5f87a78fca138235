"""Submissions to assignment A (tests/test_assignments.py): plausible mistakes and attempts to call the package's
or PyTorch's own solution. student -> ({solution cell: (anchor, replacement), a list of them or a whole new
source}, the parts that lose all their points). Every other part keeps all of its points: part 3 is graded with a
correct part 2, even one it holds as a default argument. A correct answer that writes to stderr keeps its points
too ("noisy")."""

PERMUTE = "grid = grid.permute(0, 2, 4, 3, 5, 1)"

SUBMISSIONS = {
    # (c p1 p2) patch order (F.unfold's); no 1/sqrt(Dh); the out kernel not transposed. Part 3 keeps its points.
    "mistakes-1": ({
        "patchify": (PERMUTE, "grid = grid.permute(0, 2, 4, 1, 3, 5)"),
        "attention": (" / math.sqrt(q.shape[-1])", ""),
        "flax": ('"h dh d -> d (h dh)"', '"h dh d -> (h dh) d"'),
    }, {"patchify", "attention", "flax"}),
    # patches column by column; softmax over the queries; qkv read as (heads, 3, Dh); heads' columns as (dh h).
    "mistakes-2": ({
        "patchify": (PERMUTE, "grid = grid.permute(0, 4, 2, 3, 5, 1)"),
        "attention": ("scores.softmax(dim=-1)", "scores.softmax(dim=-2)"),
        "mha": ('"b n (three h dh) -> three b h n dh"', '"b n (h three dh) -> three b h n dh"'),
        "flax": ('"d h dh -> (h dh) d"', '"d h dh -> (dh h) d"'),
    }, {"patchify", "attention", "mha", "flax"}),
    # the package's functions as a default argument and in functools.partial; torch.nn.MultiheadAttention
    "bypass-1": ({
        "patchify": "def my_patchify(images, patch_size, _impl=minivit.patchify):\n    return _impl(images, patch_size)\n",
        "attention": "import functools\nattention = functools.partial(minivit.attention_with_weights)\n",
        "mha": ("def multi_head_attention(x, qkv_weight, qkv_bias, proj_weight, proj_bias, heads):\n"
                "    d = x.shape[-1]\n"
                "    layer = torch.nn.MultiheadAttention(d, heads, batch_first=True)\n"
                "    with torch.no_grad():\n"
                "        layer.in_proj_weight.copy_(qkv_weight); layer.in_proj_bias.copy_(qkv_bias)\n"
                "        layer.out_proj.weight.copy_(proj_weight); layer.out_proj.bias.copy_(proj_bias)\n"
                "    return layer(x, x, x, need_weights=False)[0]\n"),
    }, {"patchify", "attention", "mha"}),
    # a refusal caught and answered around; the package's function in a container; a minivit.Attention object
    "bypass-2": ({
        "patchify": ("def my_patchify(images, patch_size):\n"
                     "    try:\n"
                     "        return minivit.patchify(images, patch_size)\n"
                     "    except Exception:\n"
                     "        b, c, h, w = images.shape\n"
                     "        return torch.zeros(b, (h // patch_size) * (w // patch_size), patch_size ** 2 * c)\n"),
        "attention": ("TOOLS = {'attend': minivit.attention_with_weights}\n"
                      "def attention(q, k, v):\n    return TOOLS['attend'](q, k, v)\n"),
        "mha": ("def multi_head_attention(x, qkv_weight, qkv_bias, proj_weight, proj_bias, heads,\n"
                "                         _layer=minivit.Attention(8, 1, fused=False)):\n"
                "    layer = minivit.Attention(x.shape[-1], heads, fused=False)\n"
                "    layer.load_state_dict({'qkv.weight': qkv_weight, 'qkv.bias': qkv_bias,\n"
                "                           'proj.weight': proj_weight, 'proj.bias': proj_bias})\n"
                "    return layer(x)\n"),
    }, {"patchify", "attention", "mha"}),
    # multi-head attention with neither bias (the hunt's W4): a fresh block's biases are 0, so test_mha_2 gives its
    # block random ones; the part loses all its points.
    "no-biases": ({
        "mha": [("qkv = x @ qkv_weight.T + qkv_bias", "qkv = x @ qkv_weight.T"),
                ("return out @ proj_weight.T + proj_bias", "return out @ proj_weight.T")],
    }, {"mha"}),
    # part 2 without the scale; part 3 right, holding part 2's answer as a default argument (the hunt's W7): graded
    # with the reference part 2 all the same (graded_with replaces it in the defaults), so part 3 keeps its points.
    "default-argument": ({
        "attention": (" / math.sqrt(q.shape[-1])", ""),
        "mha": [("heads: int) -> torch.Tensor:", "heads: int, attend=attention) -> torch.Tensor:"),
                ("out, _ = attention(q, k, v)", "out, _ = attend(q, k, v)")],
    }, {"attention"}),
    # every part right, each writing to stderr as students' answers do: a print to sys.stderr, a warning, logging,
    # a tqdm bar and a write on file descriptor 2. nbgrader scores a cell with stderr output 0: the checks show it
    # on stdout instead, so every part keeps its points.
    "noisy": ({
        "patchify": ("    b, c, h, w = images.shape\n",
                     "    import sys\n"
                     "    print(f'patchify: {tuple(images.shape)}', file=sys.stderr)\n"
                     "    b, c, h, w = images.shape\n"),
        "attention": ("    scores = q @ k.transpose(-2, -1)",
                      "    import warnings\n"
                      "    warnings.warn('attention: is this scaled right?')\n"
                      "    scores = q @ k.transpose(-2, -1)"),
        "mha": ("    qkv = x @ qkv_weight.T + qkv_bias",
                "    import logging\n"
                "    logging.getLogger('my_mha').warning('multi-head attention with %d heads', heads)\n"
                "    qkv = x @ qkv_weight.T + qkv_bias"),
        "flax": ("    qkv_weight = torch.cat(",
                 "    import os\n"
                 "    from tqdm import tqdm\n"
                 "    for _ in tqdm(range(3), desc='from_flax'):\n"
                 "        pass\n"
                 "    os.write(2, b'from_flax: done on fd 2\\n')\n"
                 "    qkv_weight = torch.cat("),
    }, set()),
}

# Answers that fake the checks from an answer cell (issue 38 item 2, the hunt's rows 19-24), each on the instructor's
# source. An answer cell that changes the kernel, the set-up cell's names or the checks' references gets every later
# cell refused by the grading kernel's keeper (minivit.grading_kernel): it loses every part from its own on. One
# that fakes only its own values (a tensor subclass) loses its part.
FIRST_ANSWER = "def my_patchify("
SUBMISSIONS.update({
    # row 24: an input transformer in the first answer cell; every later cell would run `pass`
    "fake-transformer": ({
        "patchify": (FIRST_ANSWER, "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n\n"
                                   + FIRST_ANSWER),
    }, {"patchify", "attention", "mha", "flax"}),
    # row 19: `guarded` rebound, and part 2 answered by the package's own function
    "fake-guarded": ({
        "attention": ("guarded = lambda fn, paths, hint='': fn\n\n"
                      "def attention(q, k, v):\n    return minivit.attention_with_weights(q, k, v)\n"),
    }, {"attention", "mha", "flax"}),
    # row 20: the checks rebound to pass, part 3 answered with zeros
    "fake-checks": ({
        "mha": ("from minivit.grading import CheckResult\n"
                "check_multi_head_attention = lambda *a, **k: CheckResult('multi-head attention', 3, 3)\n"
                "check_cases = lambda name, *a, **k: CheckResult(name, 1, 1)\n\n"
                "def multi_head_attention(x, qkv_weight, qkv_bias, proj_weight, proj_bias, heads):\n"
                "    return torch.zeros_like(x)\n"),
    }, {"mha", "flax"}),
    # row 21: PyTorch's comparisons replaced (part 4's answer right otherwise)
    "fake-allclose": ({
        "flax": ("def from_flax(", "torch.allclose = torch.equal = lambda *a, **k: True\n\ndef from_flax("),
    }, {"flax"}),
    # row 23: grading's record cleared (refused: it is read-only), then part 1's reference given zeros' code
    "fake-record": ({
        "flax": ("def from_flax(", "import minivit.grading, minivit.patching\n"
                                   "try:\n    minivit.grading._ORIGINAL.clear()\nexcept Exception:\n    pass\n"
                                   "minivit.patching.patchify.__code__ = (lambda images, patch_size: images).__code__\n"
                                   "\ndef from_flax("),
    }, {"flax"}),
    # row 22: zeros returned as a tensor subclass that agrees with every comparison (no global changed)
    "fake-subclass": ({
        "patchify": ("class Agreeable(torch.Tensor):\n"
                     "    @classmethod\n"
                     "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                     "        if getattr(func, '__name__', '') in ('allclose', 'equal', 'isclose'):\n"
                     "            return True\n"
                     "        return super().__torch_function__(func, types, args, kwargs or {})\n\n"
                     "def my_patchify(images, patch_size):\n"
                     "    b, c, h, w = images.shape\n"
                     "    n = (h // patch_size) * (w // patch_size)\n"
                     "    return torch.zeros(b, n, patch_size * patch_size * c).as_subclass(Agreeable)\n"),
    }, {"patchify"}),
})

# The guard refuses by code (issue 38 item 3, the hunt's rows 6-18): the package's module run again from its own
# file, functions re-made from code objects saved when the answer cell runs, a verbatim copy of the source, PyTorch's
# attention under private names, timm's layer, the checks' own written-out MSA. Each would be right if it ran, and
# loses the part it answers.
RUN_AGAIN = ("import importlib.util\n"
             "\n"
             "def run_again(name):\n"
             "    spec = importlib.util.find_spec(name)\n"
             "    module = importlib.util.module_from_spec(spec)\n"
             "    spec.loader.exec_module(module)\n"
             "    return module\n"
             "\n")
REMADE = ("import types\n"
          "\n"
          "def remade(module):\n"
          "    space = dict(vars(module))\n"
          "    for key, value in vars(module).items():\n"
          "        if isinstance(value, types.FunctionType) and value.__globals__ is vars(module):\n"
          "            space[key] = types.FunctionType(value.__code__, space, value.__name__, value.__defaults__,\n"
          "                                            value.__closure__)\n"
          "            space[key].__kwdefaults__ = value.__kwdefaults__\n"
          "    return space\n"
          "\n")
LOADED = ("    layer.load_state_dict({'qkv.weight': qkv_weight, 'qkv.bias': qkv_bias,\n"
          "                           'proj.weight': proj_weight, 'proj.bias': proj_bias})\n"
          "    return layer(x)\n")
MHA_DEF = "def multi_head_attention(x, qkv_weight, qkv_bias, proj_weight, proj_bias, heads):\n"
SUBMISSIONS.update({
    # rows 6-8: minivit.patching and minivit.attention run again from their files
    "code-run-again": ({
        "patchify": RUN_AGAIN + "patching = run_again('minivit.patching')\n\n"
                                "def my_patchify(images, patch_size):\n    return patching.patchify(images, patch_size)\n",
        "attention": "again = run_again('minivit.attention')\n\n"
                     "def attention(q, k, v):\n    return again.attention_with_weights(q, k, v)\n",
        "mha": MHA_DEF + "    layer = again.Attention(x.shape[-1], heads, fused=False)\n" + LOADED,
    }, {"patchify", "attention", "mha"}),
    # rows 9, 10, 12: functions re-made from their saved code objects; Attention's methods re-made in a subclass
    "code-saved": ({
        "patchify": REMADE + "import minivit.patching\nmy_patchify = remade(minivit.patching)['patchify']\n",
        "attention": "import minivit.attention\nattention = remade(minivit.attention)['attention_with_weights']\n",
        "mha": ("class Remade(minivit.Attention):\n"
                "    pass\n"
                "\n"
                "for name, f in vars(minivit.Attention).items():\n"
                "    if isinstance(f, types.FunctionType):\n"
                "        setattr(Remade, name, types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__,\n"
                "                                                 f.__closure__))\n"
                "\n" + MHA_DEF + "    layer = Remade(x.shape[-1], heads, fused=False)\n" + LOADED),
    }, {"patchify", "attention", "mha"}),
    # rows 13, 14, 16: exec(inspect.getsource(...)); torch.ops.aten's math attention; torch._native_multi_head_attention
    "code-copies": ({
        "patchify": ("import inspect\n"
                     "import minivit.patching\n"
                     "copied = {}\n"
                     "exec(inspect.getsource(minivit.patching), copied)\n"
                     "my_patchify = copied['patchify']\n"),
        "attention": "def attention(q, k, v):\n    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)\n",
        "mha": MHA_DEF + ("    return torch._native_multi_head_attention(x, x, x, x.shape[-1], heads, qkv_weight, "
                          "qkv_bias, proj_weight,\n"
                          "                                              proj_bias, need_weights=False)[0]\n"),
    }, {"patchify", "attention", "mha"}),
    # rows 15 and 17: torch._scaled_dot_product_attention_math; timm.layers.Attention with the weights loaded
    "private-names": ({
        "attention": "def attention(q, k, v):\n    return torch._scaled_dot_product_attention_math(q, k, v)\n",
        "mha": "import timm.layers\n\n" + MHA_DEF
               + "    layer = timm.layers.Attention(x.shape[-1], heads, qkv_bias=True)\n" + LOADED,
    }, {"attention", "mha"}),
    # row 18: the check's own written-out MSA, minivit.exercises._mha
    "checks-reference": ({
        "mha": "import minivit.exercises\n\n" + MHA_DEF
               + "    return minivit.exercises._mha(x, qkv_weight, qkv_bias, proj_weight, proj_bias, heads)[0]\n",
    }, {"mha"}),
})
