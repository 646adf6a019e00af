import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";

export default defineConfig({
  plugins: [svelte()],
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true },
  test: {
    environment: "node",
    include: ["src/**/*.test.ts"],
    // Svelte's own functions (mount, onDestroy, untrack) as the window runs them: without the
    // browser build, tests that mount a view would get the server's, which only render HTML.
    alias: [{ find: /^svelte$/, replacement: decodeURIComponent(new URL("./node_modules/svelte/src/index-client.js", import.meta.url).pathname) }],
  },
});
