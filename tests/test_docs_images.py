"""The documentation's pictures: every one a page shows is in the checkout, small,
and local (the built pages load nothing from the network), and every committed
screenshot is shown somewhere. docs/screenshots.py makes them."""

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
SCREENSHOTS = DOCS / "_static" / "screenshots"

#: MyST ``{figure}`` / ``{image}`` directives and Markdown ``![alt](path)``.
IMAGE_REFERENCE = re.compile(r"^```\{(?:figure|image)\}\s+(\S+)|!\[[^\]]*\]\(([^)\s]+)",
                             re.MULTILINE)


def referenced_images():
    """(page, target) for every image the Markdown pages show."""
    return [(page, first or second)
            for page in sorted(DOCS.glob("*.md"))
            for first, second in IMAGE_REFERENCE.findall(page.read_text(encoding="utf-8"))]


def test_the_pages_show_pictures():
    pages = {page.stem for page, _ in referenced_images()}
    assert {"index", "widget", "quickstart", "hssne", "mbed", "nerv",
            "parametric-embedding", "spectral"} <= pages


@pytest.mark.parametrize("page, target", referenced_images(),
                         ids=lambda v: v.name if isinstance(v, pathlib.Path) else v)
def test_every_referenced_image_is_a_local_file(page, target):
    assert not re.match(r"(https?:)?//", target), \
        f"{page.name} loads {target} from the network; commit the image under docs/"
    path = (page.parent / target).resolve()
    assert path.is_file(), f"{page.name} shows {target}, which is not in docs/"


def test_every_screenshot_is_shown_and_small():
    shown = {(page.parent / target).resolve() for page, target in referenced_images()}
    for png in sorted(SCREENSHOTS.glob("*.png")):
        assert png.resolve() in shown, f"{png.name} is on no page: remove it or show it"
        assert png.stat().st_size < 200_000, \
            f"{png.name} is {png.stat().st_size} bytes; docs/screenshots.py keeps them small"
