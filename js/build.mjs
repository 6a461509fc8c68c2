// Bundle the widget into one ES module for anywidget (nothing is loaded from
// the network at run time).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

await build({
  entryPoints: [here("./src/index.js")],
  outfile: here("../nbembed/widget/static/explorer.js"),
  bundle: true,
  format: "esm",
  target: ["es2020"],
  minify: true,
  legalComments: "eof",
  logLevel: "info",
});
