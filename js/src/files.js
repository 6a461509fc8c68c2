// Files the user takes from or gives to the widget: the annotations as JSON
// (Export and Import buttons) and a PNG of the plot. Nothing leaves the page
// but a download; an imported file goes to Python, which checks it.
import { h } from "./dom.js";

/** Largest file Import sends to Python (Python refuses more, too). */
export const MAX_IMPORT_BYTES = 256 * 2 ** 20;
export const PNG_FILENAME = "nbembed-explorer.png";

/** The text of a file (Blob.text where the browser has it, else a FileReader). */
export function readText(file) {
  if (typeof file.text === "function") return file.text();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsText(file);
  });
}

/** Offer `blob` as a download named `filename`. */
export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // The download has started once click() returns; the URL is no longer needed.
  URL.revokeObjectURL(url);
}

/** The plot as shown (points, then the marks layer over them), as a PNG blob. */
export async function plotPng(scatter, marksCanvas) {
  const image = await scatter.exportImage();
  const out = document.createElement("canvas");
  out.width = image.width;
  out.height = image.height;
  const ctx = out.getContext("2d");
  ctx.putImageData(image, 0, 0);
  if (marksCanvas.width && marksCanvas.height) ctx.drawImage(marksCanvas, 0, 0, out.width, out.height);
  return new Promise((resolve, reject) =>
    out.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("the browser made no PNG"))), "image/png"));
}

/**
 * The Export, Import and PNG actions.
 *
 * @returns {input, handle(action)}: the hidden file input to add to the page,
 *   and a function that runs "export", "import" or "png" and says whether it did.
 */
export function createFileActions(model, disposer, { say, getScatter, marksCanvas }) {
  const input = h("input", { type: "file", accept: ".json,application/json", hidden: true, "data-role": "import-file" });
  disposer.listen(input, "change", async () => {
    const file = input.files?.[0];
    input.value = "";
    if (!file) return;
    if (file.size > MAX_IMPORT_BYTES) {
      say(`${file.name} is too large (${file.size} bytes) to be annotations; nothing was imported.`);
      return;
    }
    try {
      model.send({ type: "import_annotations", text: await readText(file) });
      say(`Importing ${file.name}…`);
    } catch (err) {
      say(`Could not read ${file.name}: ${err.message}`);
    }
  });
  disposer.onModel(model, "msg:custom", (content) => {
    if (content?.type !== "annotations_json" || typeof content.text !== "string") return;
    download(new Blob([content.text], { type: "application/json" }), content.filename || "annotations.json");
  });
  const handle = (action) => {
    if (action === "export") model.send({ type: "export_annotations" });
    else if (action === "import") input.click();
    else if (action === "png") {
      plotPng(getScatter(), marksCanvas)
        .then((blob) => {
          download(blob, PNG_FILENAME);
          say(`Saved the view as ${PNG_FILENAME}.`);
        })
        .catch((err) => say(`Could not save the view: ${err.message}`));
    } else return false;
    return true;
  };
  return { input, handle };
}
