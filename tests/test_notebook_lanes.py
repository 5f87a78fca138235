"""notebooks/conftest.py's two lanes for `make notebooks` (two at a time): drawn for the notebooks collected, the
longest first to the least loaded lane, 04, 05 and 06 in one lane (05 and 06 load the models 04 trained)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _conftest():
    spec = importlib.util.spec_from_file_location("notebooks_conftest", ROOT / "notebooks" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _loads(m, lanes):
    out = {}
    for number, lane in lanes.items():
        out[lane] = out.get(lane, 0) + m.SECONDS[number]
    return out


def test_every_notebook_gets_a_lane_and_04_runs_beside_05_and_06():
    m = _conftest()
    numbers = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert set(m.SECONDS) == set(numbers)  # a time for every notebook, none for one that is gone
    lanes = m.lanes_for(numbers)
    assert set(lanes) == set(numbers) and set(lanes.values()) == {"lane-1", "lane-2"}
    assert lanes["04"] == lanes["05"] == lanes["06"]
    loads = sorted(_loads(m, lanes).values())
    # the greedy split is within the longest unit's share of the best split (LPT's bound for two lanes)
    assert loads[1] - loads[0] <= max(m.SECONDS.values())


def test_the_other_copy_notebooks_are_balanced_on_their_own():
    m = _conftest()
    for some in (["00", "04", "05", "07", "08"],  # make other-copy's (05 since 2026-12-08)
                 ["00", "04", "07", "08"],  # its four until then
                 ["00", "04", "06", "07", "08", "09"]):  # its six until 2026-12-02: 06 beside 04
        lanes = m.lanes_for(some)
        assert set(lanes) == set(some) and len(_loads(m, lanes)) == 2
        assert lanes["04"] != lanes["07"]  # the two longest apart
    assert m.lanes_for(["04"], 2) == {"04": "lane-1"} and m.lanes_for(["12"], 1) == {"12": "lane-1"}
    part = m.lanes_for(["04", "05", "07"])  # 05 without 06 still follows 04 (it loads 04's models)
    assert part["04"] == part["05"] != part["07"]
