// Hover tooltip: index, class, optional text and thumbnail of a point.
import { decodeUint8 } from "./codecs.js";
import { h } from "./dom.js";

/** RGBA pixels of image `i` from `images` (n * h * w [* c] bytes). */
export function thumbnailPixels(images, shape, i) {
  const [height, width, channels = 1] = shape;
  const size = height * width * channels;
  const start = i * size;
  if (!height || !width || start + size > images.length) return null;
  const rgba = new Uint8ClampedArray(height * width * 4);
  for (let p = 0; p < height * width; p++) {
    const src = start + p * channels;
    rgba[4 * p] = images[src];
    rgba[4 * p + 1] = images[channels >= 3 ? src + 1 : src];
    rgba[4 * p + 2] = images[channels >= 3 ? src + 2 : src];
    rgba[4 * p + 3] = channels === 4 ? images[src + 3] : 255;
  }
  return { rgba, width, height };
}

/**
 * The parts of a tooltip's line: "#i", the point's class (what it is coloured
 * by), its hover text and its marks, each said once: a hover text equal to the
 * class is left out, and a label equal to it is said as "labelled".
 */
export function tooltipParts(i, name, hoverText, marks) {
  const parts = [`#${i}`];
  if (name) parts.push(name);
  if (hoverText && hoverText !== name) parts.push(hoverText);
  if (marks) {
    const sameLabel = name && (marks === `label ${name}` || marks.startsWith(`label ${name} · `));
    parts.push(sameLabel ? `labelled${marks.slice(`label ${name}`.length)}` : marks);
  }
  return parts;
}

export function createTooltip(model) {
  const text = h("div", { className: "nbembed-tooltip-text" });
  const thumb = h("canvas", { className: "nbembed-thumbnail" });
  const element = h("div", { className: "nbembed-tooltip", role: "tooltip" }, [thumb, text]);
  element.hidden = true;
  let images = null;

  const classOf = (i, codes, legend) => {
    const code = codes?.[i];
    return legend.find((entry) => entry.code === code)?.name;
  };

  return {
    element,
    /** Show point `i` at pixel (x, y) of the plot, with the line `marks`; i < 0 hides. */
    show(i, x, y, codes, marks = "") {
      if (i < 0) {
        element.hidden = true;
        return;
      }
      const name = classOf(i, codes, model.get("legend") ?? []);
      const hover = model.get("hover_text") ?? [];
      text.textContent = tooltipParts(i, name, hover[i], marks).join(" · ");
      if (images === null) images = decodeUint8(model.get("_images"));
      const pixels = images.length ? thumbnailPixels(images, model.get("image_shape"), i) : null;
      thumb.hidden = !pixels;
      if (pixels) {
        thumb.width = pixels.width;
        thumb.height = pixels.height;
        thumb.getContext("2d")?.putImageData(
          new ImageData(pixels.rgba, pixels.width, pixels.height), 0, 0);
      }
      element.style.left = `${x + 12}px`;
      element.style.top = `${y + 12}px`;
      element.hidden = false;
    },
    /** Forget decoded images (the trait changed). */
    reset() {
      images = null;
    },
  };
}
