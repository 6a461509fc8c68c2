// Annotation controls: mode, class, confidence, Apply / Undo, and what Python holds.
import { encodeSelection } from "./codecs.js";
import { h } from "./dom.js";

export const MODES = [
  ["soft_label", "Label (class + confidence)"],
  ["must_link", "Must-link (belong together)"],
  ["cannot_link", "Cannot-link (A apart from B)"],
];
export const NEW_CLASS = "__new__";

/**
 * The message an Apply sends, or an error string when the form is incomplete.
 * `form` holds the values of the mode, class, new-class and confidence inputs.
 */
export function applyMessage(form) {
  const message = { type: "apply", mode: form.mode };
  if (form.mode !== "soft_label") return message;
  const confidence = Number(form.confidence);
  if (!(confidence > 0 && confidence <= 1)) return "Confidence must be in (0, 1].";
  message.confidence = confidence;
  if (form.label === NEW_CLASS) {
    const name = (form.newClass ?? "").trim();
    if (!name) return "Type a name for the new class.";
    message.label = NEW_CLASS;
    message.new_class = name;
  } else {
    message.label = Number(form.label);
  }
  return message;
}

/**
 * @param getSelection () => Uint32Array of the selected points
 * @param say (text) => void shows a local notice
 */
export function createAnnotationPanel(model, disposer, root, { getSelection, say }) {
  const mode = h("select", { "data-role": "mode" });
  for (const [value, text] of MODES) mode.append(h("option", { value, text }));
  const classSelect = h("select", { "data-role": "class", title: "Class to assign" });
  const newClass = h("input", { type: "text", "data-role": "new-class", placeholder: "new class name" });
  const confidence = h("input", {
    type: "number", "data-role": "confidence", min: "0.05", max: "1", step: "0.05", value: "1",
    title: "Confidence in the label, in (0, 1]",
  });
  const apply = h("button", { type: "button", "data-action": "apply", text: "Apply", title: "Annotate the selection" });
  const undo = h("button", { type: "button", "data-action": "undo", text: "Undo", title: "Undo the last annotation" });
  const redo = h("button", { type: "button", "data-action": "redo", text: "Redo", title: "Make the last undone annotation again", disabled: true });
  const count = h("span", { "data-role": "annotation-count", text: "0" });
  const summary = h("span", { "data-role": "annotation-summary", text: "no annotations" });
  const pending = h("div", { className: "nbembed-notice", "data-role": "pending" });
  const kinds = h("div", { className: "nbembed-notice", "data-role": "kinds" });
  const labelRows = [
    h("div", { className: "nbembed-row" }, ["class", classSelect, newClass]),
    h("div", { className: "nbembed-row" }, ["confidence", confidence]),
  ];
  const element = h("fieldset", { className: "nbembed-annotate" }, [
    h("legend", { text: "Annotate selection" }),
    h("div", { className: "nbembed-row" }, [mode]),
    ...labelRows,
    h("div", { className: "nbembed-row" }, [apply, undo, redo]),
    pending,
    h("div", { className: "nbembed-row" }, [summary, " · ", count, "step(s) to undo"]),
    kinds,
  ]);

  let previousMode = mode.value;
  const showMode = () => {
    // The label inputs stay visible (and usable) in every mode; they are dimmed
    // where the mode does not use them.
    for (const row of labelRows) row.classList.toggle("nbembed-inactive", mode.value !== "soft_label");
    if (previousMode === "cannot_link" && mode.value !== "cannot_link" && model.get("pending_a")) {
      model.send({ type: "cancel_pending" });
    }
    previousMode = mode.value;
  };

  const showClasses = () => {
    const names = model.get("class_names") ?? [];
    const before = classSelect.value;
    const hadCount = classSelect.options.length - 1;
    classSelect.replaceChildren(
      ...names.map((name, k) => h("option", { value: String(k), text: name })),
      h("option", { value: NEW_CLASS, text: "New class…" }),
    );
    if (before === NEW_CLASS && names.length > hadCount && hadCount >= 0) {
      classSelect.value = String(names.length - 1); // the class just created
      newClass.value = "";
    } else if (before && [...classSelect.options].some((o) => o.value === before)) {
      classSelect.value = before;
    } else {
      classSelect.value = names.length ? "0" : NEW_CLASS;
    }
    showMode();
  };

  const showState = () => {
    const a = model.get("pending_a") ?? 0;
    root.dataset.pendingA = String(a);
    pending.textContent = a ? `Selection A: ${a} point(s). Select B and apply.` : "";
    count.textContent = String(model.get("annotation_count") ?? 0);
    redo.disabled = !(model.get("redo_count") > 0);
    summary.textContent = model.get("annotation_summary") || "no annotations";
    const used = model.get("annotation_kinds") ?? [];
    kinds.textContent = `${model.get("method_name") || "The method"} uses: ${used.length ? used.join(", ") : "no annotations"}`;
  };

  disposer.listen(mode, "change", showMode);
  disposer.listen(newClass, "input", () => {
    if (newClass.value.trim()) classSelect.value = NEW_CLASS;
  });
  disposer.listen(apply, "click", () => {
    const selection = getSelection();
    if (!selection.length) {
      say("Select points first: drag with the lasso (or Shift-drag).");
      return;
    }
    const message = applyMessage({
      mode: mode.value, label: classSelect.value, newClass: newClass.value, confidence: confidence.value,
    });
    if (typeof message === "string") {
      say(message);
      return;
    }
    model.send(message, undefined, [encodeSelection(selection, model.get("n_points") ?? 0)]);
  });
  disposer.listen(undo, "click", () => model.send({ type: "undo" }));
  disposer.listen(redo, "click", () => model.send({ type: "redo" }));
  disposer.onModel(model, "change:class_names", showClasses);
  for (const name of ["pending_a", "annotation_count", "redo_count", "annotation_summary", "annotation_kinds", "method_name"]) {
    disposer.onModel(model, `change:${name}`, showState);
  }
  showClasses();
  showState();
  return element;
}
