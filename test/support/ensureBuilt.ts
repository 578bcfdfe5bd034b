/**
 * Vitest global setup: the end-to-end suites run the bundled command (`dist/bin.js`), so a bundle
 * older than the source would test yesterday's agent. Rebuild when any source is newer.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"

const newestMtime = (path: string): number => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))))
}

export default function setup() {
  const bundle = "dist/dsh-acp.cjs"
  const sources = Math.max(newestMtime("src"), newestMtime("scripts/bundle.mjs"), newestMtime("scripts/snapshot.mjs"), newestMtime("package.json"))
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= sources) return
  process.stderr.write("dist/ is older than src/: running `npm run build` before the tests\n")
  execFileSync("npm", ["run", "build"], { stdio: ["ignore", "inherit", "inherit"] })
}
