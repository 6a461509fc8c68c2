import { describe, expect, it } from "vitest";
import { tooltipParts } from "../src/tooltip.js";

describe("the tooltip's line", () => {
  it("says the class once when the hover text and the label repeat it", () => {
    expect(tooltipParts(7, "3", "3", "label 3")).toEqual(["#7", "3", "labelled"]);
    expect(tooltipParts(7, "3", "3", "label 3 · must-link group 2"))
      .toEqual(["#7", "3", "labelled · must-link group 2"]);
  });

  it("keeps what differs from the class", () => {
    expect(tooltipParts(1, "cat", "a photo of a dog", "label dog"))
      .toEqual(["#1", "cat", "a photo of a dog", "label dog"]);
    expect(tooltipParts(1, "3", "", "label 30")).toEqual(["#1", "3", "label 30"]);
    expect(tooltipParts(2, undefined, undefined, "")).toEqual(["#2"]);
  });
});
