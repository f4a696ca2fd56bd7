import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { consoleAssetsBuilt, consoleAssetsDir, consoleAssetsStale, consoleSourceDir } from "../src/index.js";

/** The assets `pnpm install` built (this package's `prepare`), as the API serves them under a strict CSP. */
describe("operator console assets", () => {
  it("are built, up to date with web/, and need no inline script or style (the CSP forbids both)", () => {
    expect(consoleAssetsBuilt()).toBe(true);
    expect(consoleAssetsStale()).toBe(false);
    const index = readFileSync(`${consoleAssetsDir}/index.html`, "utf8");
    expect(index).toContain('<script type="module" crossorigin src="/console/assets/console.js"></script>');
    expect(index).toContain('href="/console/assets/console.css"');
    expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(index).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  });

  it("render every string as text: no source file of the app writes HTML", () => {
    for (const file of readdirSync(consoleSourceDir).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(`${consoleSourceDir}/${file}`, "utf8");
      expect(source, file).not.toMatch(
        /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
      );
    }
  });
});
