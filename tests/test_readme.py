"""README.md's examples work as written.

The Python blocks run in order in one namespace, as a reader would paste them
into one notebook. The ``nbembed`` command lines in the shell blocks are only
parsed (no fit runs), so a renamed or removed option fails here, and every
``python -m nbembed...`` module they name must exist.
"""

import importlib.util
import pathlib
import re
import shlex
import traceback

import pytest

from nbembed.cli import build_parser

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"

#: Modules of the optional integrations a README example may use.
OPTIONAL_MODULES = {"anndata", "pandas", "polars"}

#: A fenced block: its language after the opening fence, its text up to the closing one.
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced_blocks(language, text=None):
    """The text of every ```language block of the README (or of ``text``), in order."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def shell_commands(blocks):
    """Every command of the shell ``blocks``: one argv per ``&&``-separated part of a line."""
    commands = []
    for block in blocks:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            part = []
            for word in words + ["&&"]:
                if word == "&&":
                    if part:
                        commands.append(part)
                    part = []
                else:
                    part.append(word)
    return commands


def run_blocks(blocks, namespace):
    """Execute ``blocks`` in order in ``namespace``; fail with the block that raised."""
    for number, source in enumerate(blocks, 1):
        error = _error_of(source, f"<README.md python block {number}>", namespace)
        if error:
            pytest.fail(f"README.md python block {number} raised\n\n{source}\n{error}",
                        pytrace=False)


def _error_of(source, filename, namespace):
    """Run ``source`` in ``namespace``; return the traceback it raised, or None."""
    try:
        exec(compile(source, filename, "exec"), namespace)
    except Exception as exc:
        # An environment without the built widget, not a mistake in the README.
        if type(exc).__name__ == "BundleMissingError":
            pytest.skip(f"the Explorer's JavaScript bundle is not built: {exc}")
        if isinstance(exc, ModuleNotFoundError) and exc.name in OPTIONAL_MODULES:
            pytest.skip(f"{exc.name} (an optional integration) is not installed")
        return traceback.format_exc()
    return None


def close_widgets(namespace):
    """Stop and close every widget the blocks left running (the Explorer optimizes in a thread)."""
    for value in namespace.values():
        if type(value).__module__.startswith("nbembed.widget") and hasattr(value, "close"):
            value.close()


# ------------------------------------------------------------------ python blocks

@pytest.mark.slow
def test_python_blocks_run_in_order():
    blocks = fenced_blocks("python")
    assert blocks, "README.md has no python blocks"
    namespace = {"__name__": "__readme__"}
    try:
        run_blocks(blocks, namespace)
    finally:
        close_widgets(namespace)


def test_a_failing_block_names_itself():
    namespace = {}
    with pytest.raises(pytest.fail.Exception, match=r"(?s)block 2 raised.*y_missing.*NameError"):
        run_blocks(["x = 1\n", "print(x, y_missing)\n"], namespace)
    assert namespace["x"] == 1


# ------------------------------------------------------------------- shell blocks

def nbembed_commands():
    """The argv (without the program) of every ``nbembed`` command in the shell blocks."""
    return [argv[1:] for argv in shell_commands(fenced_blocks("bash"))
            if pathlib.PurePath(argv[0]).name == "nbembed"]


def test_readme_shows_nbembed_commands():
    assert nbembed_commands(), "README.md's shell blocks have no nbembed command"


@pytest.mark.parametrize("argv", nbembed_commands(), ids=shlex.join)
def test_nbembed_command_parses(argv):
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse reports the mistake on stderr and exits
        pytest.fail(f"`nbembed {shlex.join(argv)}` from README.md does not parse "
                    f"(exit status {exc.code})", pytrace=False)


def test_python_modules_of_shell_commands_exist():
    modules = [argv[argv.index("-m") + 1] for argv in shell_commands(fenced_blocks("bash"))
               if "-m" in argv and argv[argv.index("-m") + 1].startswith("nbembed")]
    assert modules, "README.md runs no nbembed module"
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    assert not missing, f"README.md runs modules that do not exist: {missing}"


def test_shell_commands_split_at_and_and_drop_comments():
    blocks = ["a -x && b 'c d'  # note\n\n# only a comment\ne\n"]
    assert shell_commands(blocks) == [["a", "-x"], ["b", "c d"], ["e"]]
