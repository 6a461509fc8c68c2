// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { Disposer } from "../src/dom.js";
import { fakeModel } from "./fake-model.js";
import { createReadouts, createStepper, formatReadout, sparklinePoints } from "../src/teaching.js";

describe("sparklinePoints", () => {
  it("spans the box, highest value at the top, and skips missing values", () => {
    expect(sparklinePoints([0, 1, 2], 10, 4)).toBe("0.0,4.0 5.0,2.0 10.0,0.0");
    expect(sparklinePoints([1, null, 3], 10, 4)).toBe("0.0,4.0 10.0,0.0");
    expect(sparklinePoints([5, 5], 10, 4)).toBe("0.0,2.0 10.0,2.0");
    expect(sparklinePoints([], 10, 4)).toBe("");
    expect(sparklinePoints(undefined, 10, 4)).toBe("");
  });
});

describe("read-outs", () => {
  it("show the values and follow the quality trait", () => {
    const model = fakeModel({ quality: {} });
    const root = document.createElement("div");
    const panel = createReadouts(model, new Disposer(), root);
    const value = (key) => panel.querySelector(`[data-readout="${key}"]`).textContent;
    expect(value("trustworthiness")).toBe("–");
    model.change("quality", {
      iteration: 7, sample_size: 50, cost: 1.23456, trustworthiness: 0.9, continuity: 0.8,
      knn_accuracy: null, history: { trustworthiness: [0.5, 0.9] },
    });
    expect(value("trustworthiness")).toBe("0.9");
    expect(value("cost")).toBe("1.235");
    expect(value("knn_accuracy")).toBe("–");
    expect(root.dataset.qualityIteration).toBe("7");
    const line = panel.querySelector('[data-sparkline="trustworthiness"] polyline');
    expect(line.getAttribute("points")).toBe("0.0,18.0 80.0,0.0");
    expect(formatReadout(Number.NaN)).toBe("–");
  });
});

describe("step control", () => {
  it("sends the count while paused and refuses a bad one", () => {
    const model = fakeModel({ status: "running" });
    const said = [];
    const el = createStepper(model, new Disposer(), (text) => said.push(text));
    const [button, count] = [el.querySelector("button"), el.querySelector("input")];
    expect(button.disabled).toBe(true);
    model.change("status", "paused");
    expect(button.disabled).toBe(false);
    button.click();
    count.value = "3";
    button.click();
    count.value = "0";
    button.click();
    expect(model.sent).toEqual([{ type: "step", n: 1 }, { type: "step", n: 3 }]);
    expect(said[0]).toMatch(/whole number/);
  });
});
