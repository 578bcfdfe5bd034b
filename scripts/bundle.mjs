// Bundles the command into dist/ as minified ESM: an unbundled Effect program pays ~0.45 s of
// module loading at every start, and Zed starts the agent for every new thread. Rarely used parts
// (the demo client) are dynamic imports, so splitting keeps them out of the start-up chunk.
import { build } from "esbuild"
import { rmSync } from "node:fs"

rmSync("dist", { recursive: true, force: true })
await build({
  entryPoints: { bin: "src/bin.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  sourcemap: "linked",
  legalComments: "none",
  banner: { js: "#!/usr/bin/env node" },
  chunkNames: "chunks/[name]-[hash]",
  logLevel: "warning"
})
