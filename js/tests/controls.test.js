// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { createParameters, inBounds } from "../src/controls.js";
import { Disposer } from "../src/dom.js";
import { fakeModel } from "./fake-model.js";

const LAMBDA = {
  name: "lambda_", label: "λ", description: "", low: 0, high: null, low_open: true,
  high_open: true, min: 0.5, max: 30, step: 0.05, allows_auto: true,
};

describe("inBounds", () => {
  it("excludes an open end and keeps a closed one", () => {
    const lambda = { low: 0, high: null, low_open: true, high_open: true };
    expect(inBounds(lambda, 0)).toBe(false);
    expect(inBounds(lambda, 0.01)).toBe(true);
    const rho = { low: 0, high: 1, low_open: false, high_open: false };
    expect(inBounds(rho, 0)).toBe(true);
    expect(inBounds(rho, 1)).toBe(true);
    expect(inBounds(rho, 1.01)).toBe(false);
  });

  it("refuses non-numbers", () => {
    expect(inBounds({ low: null, high: null }, Number.NaN)).toBe(false);
    expect(inBounds({ low: null, high: null }, Infinity)).toBe(false);
  });
});

describe("a parameter left to the method", () => {
  it("shows the value the method uses and continues from it when switched to manual", () => {
    const model = fakeModel({ param_specs: [LAMBDA], params: { lambda_: null }, param_values: {} });
    const element = createParameters(model, new Disposer());
    const label = element.querySelector('[data-param-value="lambda_"]');
    const auto = element.querySelector('[data-param-auto="lambda_"]');
    expect(auto.checked).toBe(true);
    expect(label.textContent).toBe("auto");

    model.change("param_values", { lambda_: 0.064 }); // below the slider's range
    expect(label.textContent).toBe("auto: 0.064");

    auto.checked = false;
    auto.dispatchEvent(new Event("change"));
    expect(model.state.params).toEqual({ lambda_: 0.064 });
  });
});

describe("a parameter that changes nothing now", () => {
  it("is dimmed with the reason, and usable again once it matters", () => {
    const RHO = { ...LAMBDA, name: "rho", label: "ρ", low: 0, high: 1, allows_auto: false };
    const model = fakeModel({
      param_specs: [RHO], params: { rho: 0.5 }, param_values: {},
      idle_params: { rho: "no must-links or labels yet" },
    });
    const element = createParameters(model, new Disposer());
    const row = element.querySelector('[data-param="rho"]').closest(".nbembed-param");
    expect(row.classList.contains("nbembed-inactive")).toBe(true);
    expect(row.title).toBe("no must-links or labels yet");
    expect(element.querySelector('[data-param="rho"]').disabled).toBe(false);

    model.change("idle_params", {});
    expect(row.classList.contains("nbembed-inactive")).toBe(false);
    expect(row.title).toBe("");
  });
});
