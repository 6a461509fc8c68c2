"""Hatchling build hook: bundle the Explorer widget's JavaScript into the package.

Runs ``npm ci`` and ``npm run build`` in ``js/`` when a wheel or sdist is
built, which writes ``nbembed/widget/static/explorer.js`` (git-ignored, so it
is declared as an artifact in pyproject.toml). Building an sdist's wheel
without npm works when the sdist already carries the bundle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = Path("nbembed", "widget", "static", "explorer.js")


class WidgetBundleHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        root = Path(self.root)
        js = root / "js"
        bundle = root / BUNDLE
        if os.environ.get("NBEMBED_SKIP_JS_BUILD") and bundle.is_file():
            return
        npm = shutil.which("npm")
        if npm is None or not (js / "package.json").is_file():
            if bundle.is_file():
                self.app.display_warning(
                    f"npm or js/ is not available; packaging the existing {BUNDLE}.")
                return
            raise RuntimeError(
                f"Building nbembed needs npm (Node.js >= 18) to bundle the Explorer widget's "
                f"JavaScript into {BUNDLE}, but "
                f"{'npm is not on PATH' if npm is None else 'js/package.json is missing'}. "
                f"Install Node.js and npm, or build the bundle first with "
                f"`npm --prefix js ci && npm --prefix js run build`.")
        self.app.display_info("Bundling the Explorer widget (npm ci && npm run build in js/)")
        for command in ([npm, "ci", "--no-audit", "--no-fund"], [npm, "run", "build"]):
            result = subprocess.run(command, cwd=js)
            if result.returncode:
                raise RuntimeError(f"`{' '.join(command[1:])}` failed in {js} (exit code "
                                   f"{result.returncode}); see its output above.")
        if not bundle.is_file():
            raise RuntimeError(f"npm run build did not write {BUNDLE}.")
