"""pytest at the repository's root: `pytest --nbval notebooks/` where nbval is not installed says what to install.

Without this file pytest answers `--nbval` with its own "unrecognized arguments: --nbval", which does not say that
the option is a plugin's. Here, only when the nbval plugin is not loaded, `--nbval` and `--nbval-lax` are
registered as placeholders and a run that uses them stops at once with a usage error naming the package. Where
nbval is installed this file adds nothing (nbval's own options are the real ones).
"""

import pytest

NBVAL_MISSING = "pytest --nbval needs the nbval plugin: pip install nbval (or make install)"


def pytest_addoption(parser, pluginmanager):
    if pluginmanager.hasplugin("nbval"):
        return
    group = parser.getgroup("nbval (not installed)")
    for flag in ("--nbval", "--nbval-lax"):
        group.addoption(flag, action="store_true", dest=f"_minivit_missing_{flag[2:].replace('-', '_')}",
                        help=f"needs the nbval plugin, not installed here: {NBVAL_MISSING}")


def pytest_configure(config):
    if config.pluginmanager.hasplugin("nbval"):
        return
    if getattr(config.option, "_minivit_missing_nbval", False) or getattr(config.option, "_minivit_missing_nbval_lax",
                                                                          False):
        raise pytest.UsageError(NBVAL_MISSING)
