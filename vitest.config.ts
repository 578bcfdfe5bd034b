import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/ensureBuilt.ts", "test/support/isolatedState.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Process tests spawn real bash trees; two cores are shared between workers.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
