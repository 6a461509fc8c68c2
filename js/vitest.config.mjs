// Unit tests of the widget's JavaScript. A test that builds the whole widget in
// jsdom takes about 5 s on a busy two-core machine, vitest's default limit.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { testTimeout: 60000 },
});
