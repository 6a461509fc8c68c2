"""Hatchling build hook: bundle the Explorer widget's JavaScript into the package.

Runs ``npm ci`` and ``npm run build`` in ``js/`` when a wheel or sdist is
built from a source checkout, which writes
``nbembed/widget/static/explorer.js`` (git-ignored, so it is declared as an
artifact in pyproject.toml). The sdist carries that bundle, so a wheel built
from an sdist uses it as it is and needs neither Node.js nor the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = Path("nbembed", "widget", "static", "explorer.js")
BUILD_COMMAND = "npm --prefix js ci && npm --prefix js run build"


class WidgetBundleHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        root = Path(self.root)
        js = root / "js"
        bundle = root / BUNDLE
        # Only an unpacked sdist has PKG-INFO at its root; its bundle was built
        # from the js/ sources it carries, so it is never stale.
        from_sdist = (root / "PKG-INFO").is_file()
        if bundle.is_file() and (from_sdist or os.environ.get("NBEMBED_SKIP_JS_BUILD")):
            return
        npm = shutil.which("npm")
        if npm is None or not (js / "package.json").is_file():
            if bundle.is_file():
                self.app.display_warning(
                    f"npm or js/ is not available; packaging the existing {BUNDLE}.")
                return
            raise RuntimeError(self._missing_bundle_message(npm, from_sdist))
        self.app.display_info("Bundling the Explorer widget (npm ci && npm run build in js/)")
        for command in ([npm, "ci", "--no-audit", "--no-fund"], [npm, "run", "build"]):
            result = subprocess.run(command, cwd=js)
            if result.returncode:
                raise RuntimeError(f"`{' '.join(command[1:])}` failed in {js} (exit code "
                                   f"{result.returncode}); see its output above.")
        if not bundle.is_file():
            raise RuntimeError(f"npm run build did not write {BUNDLE}.")

    @staticmethod
    def _missing_bundle_message(npm, from_sdist):
        reason = "npm is not on PATH" if npm is None else "js/package.json is missing"
        if from_sdist:
            return (f"This nbembed source distribution lacks the Explorer widget's JavaScript "
                    f"bundle {BUNDLE} (release sdists carry it), and {reason} to build it. "
                    f"Install a wheel of nbembed instead, or install Node.js (>= 18) with npm "
                    f"and try again.")
        return (f"Building nbembed needs npm (Node.js >= 18) to bundle the Explorer widget's "
                f"JavaScript into {BUNDLE}, but {reason}. Install Node.js and npm, or build "
                f"the bundle first with `{BUILD_COMMAND}`.")
