// The widget's stylesheet, injected into its root (no separate CSS file).
export const CSS = `
.nbembed-explorer {
  font: 12px/1.4 var(--jp-ui-font-family, system-ui, sans-serif);
  color: var(--jp-ui-font-color1, #222);
  display: grid;
  grid-template-columns: minmax(0, 1fr) 230px;
  gap: 8px;
}
.nbembed-explorer.nbembed-narrow { grid-template-columns: minmax(0, 1fr); }
.nbembed-narrow .nbembed-side { flex-direction: row; flex-wrap: wrap; }
.nbembed-narrow .nbembed-side fieldset { flex: 1 1 220px; }
.nbembed-explorer button, .nbembed-explorer select, .nbembed-explorer input {
  font: inherit;
}
/* Some hosts reset form controls (marimo does, in the widget's shadow root), which
   leaves buttons and fields without a frame: the widget draws its own. */
.nbembed-explorer button, .nbembed-explorer select, .nbembed-explorer input[type="text"],
.nbembed-explorer input[type="number"], .nbembed-explorer input[type="search"] {
  border: 1px solid var(--jp-border-color1, #b0b0b0);
  border-radius: 3px;
  padding: 1px 4px;
  background: var(--jp-layout-color1, #fff);
  color: inherit;
}
.nbembed-explorer button {
  padding: 1px 6px;
  background: var(--jp-layout-color2, #eee);
  cursor: pointer;
}
.nbembed-explorer button:disabled { opacity: 0.5; cursor: default; }
.nbembed-explorer [hidden] { display: none !important; }
.nbembed-toolbar, .nbembed-status {
  grid-column: 1 / -1;
  display: flex;
  flex-wrap: wrap;
  gap: 4px;
  align-items: center;
}
.nbembed-toolbar button[aria-pressed="true"] {
  background: var(--jp-brand-color1, #1976d2);
  color: white;
}
.nbembed-status [data-role="status"] { font-weight: 600; }
.nbembed-plot {
  position: relative;
  height: clamp(320px, 62vh, 1100px);
  min-width: 200px;
  border: 1px solid var(--jp-border-color2, #ddd);
  touch-action: none;
  user-select: none;
  overflow: hidden;
}
.nbembed-plot canvas.nbembed-canvas { display: block; width: 100%; height: 100%; }
.nbembed-plot canvas.nbembed-marks, .nbembed-plot canvas.nbembed-arrows {
  position: absolute;
  inset: 0;
  width: 100%;
  height: 100%;
  pointer-events: none;
}
.nbembed-plot svg {
  position: absolute;
  inset: 0;
  width: 100%;
  height: 100%;
  pointer-events: none;
}
.nbembed-plot polyline {
  fill: rgba(25, 118, 210, 0.08);
  stroke: #1976d2;
  stroke-width: 1.5;
  stroke-dasharray: 4 2;
}
.nbembed-side { display: flex; flex-direction: column; gap: 10px; min-width: 0; }
.nbembed-side fieldset {
  border: 1px solid var(--jp-border-color2, #ddd); margin: 0; padding: 6px;
  min-width: 0; /* a fieldset is as wide as its content otherwise, past the panel's edge */
}
.nbembed-side legend { font-weight: 600; }
.nbembed-readout { display: grid; grid-template-columns: minmax(0, 1fr) auto 80px; gap: 6px; align-items: center; }
.nbembed-readout > span:first-child { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.nbembed-readout-value { font-variant-numeric: tabular-nums; }
.nbembed-readout-note { color: var(--jp-ui-font-color2, #666); font-size: 0.9em; }
.nbembed-stepper input { width: 5em; }
.nbembed-forces-legend { display: flex; gap: 8px; flex-wrap: wrap; }
.nbembed-param { display: grid; grid-template-columns: auto 1fr auto; gap: 4px; align-items: center; }
.nbembed-param input[type="range"] { width: 100%; }
.nbembed-row { display: flex; gap: 4px; align-items: center; flex-wrap: wrap; margin: 3px 0; }
.nbembed-row input[type="number"] { width: 5em; }
.nbembed-row input[type="text"] { width: 8em; }
.nbembed-inactive { opacity: 0.45; }
.nbembed-legend-entry { display: flex; gap: 6px; align-items: center; }
.nbembed-swatch { width: 10px; height: 10px; border-radius: 50%; flex: none; }
.nbembed-colorbar-row { display: flex; gap: 6px; align-items: center; }
.nbembed-colorbar { flex: 1; height: 10px; min-width: 60px; border: 1px solid #ccc; }
.nbembed-toolbar input[type="search"] { width: 12em; }
.nbembed-notice { color: var(--jp-ui-font-color2, #555); min-height: 1.4em; }
.nbembed-error {
  grid-column: 1 / -1;
  color: #b00020;
  background: #fdecea;
  border: 1px solid #f5c2c0;
  padding: 4px 6px;
  white-space: pre-wrap;
}
.nbembed-error:empty { display: none; }
.nbembed-tooltip {
  position: absolute;
  pointer-events: none;
  background: rgba(255, 255, 255, 0.95);
  border: 1px solid #bbb;
  padding: 3px 5px;
  max-width: 260px;
  display: flex;
  gap: 6px;
  align-items: center;
}
.nbembed-thumbnail { width: 48px; height: 48px; image-rendering: pixelated; }
`;
