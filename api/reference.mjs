// Renders the reference page (reference.html, served by the gateway at /docs) from the public
// contract (openapi.json) with Redoc 2, the open-source renderer Redocly maintains: one HTML
// file that holds the document and Redoc's standalone bundle, so it needs no network at all
// (no CDN, no web fonts, no telemetry). `make generate` runs it: node reference.mjs.
//
// Redocly CLI's build-docs renders with Redoc 3, whose page loads its logo from a CDN and
// reports usage to Redocly's collector: neither works offline, and neither belongs in our page.
// The page's Content-Security-Policy lets it load nothing from anywhere: a renderer update that
// tries shows in the browser's console, which the page's test (deploy/local/e2e) reads.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const spec = JSON.parse(readFileSync(new URL("./openapi.json", import.meta.url), "utf8"));
// The menu's "API docs by Redocly" attribution shows a logo fetched from Redocly's CDN: it is
// inlined instead (the same link and text, the logo as a data: URI), so the page fetches nothing.
const logoURL = "https://cdn.redoc.ly/redoc/logo-mini.svg";
const logo =
  "data:image/svg+xml," +
  encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><circle cx="8" cy="8" r="7" fill="#d13b39"/></svg>');
const original = readFileSync(require.resolve("redoc/bundles/redoc.standalone.js"), "utf8");
const uses = original.split(`"${logoURL}"`).length - 1;
if (uses !== 1) throw new Error(`reference.mjs: Redoc's bundle names ${logoURL} ${uses} times, not once: check what it loads now`);
const bundle = original.replace(`"${logoURL}"`, JSON.stringify(logo));
const { version } = JSON.parse(readFileSync(require.resolve("redoc/package.json"), "utf8"));

// Redoc's options (https://redocly.com/docs/redoc/config): the whole document on one page,
// the types of webhooks and schemas shown, every success answer open.
const options = {
  expandResponses: "200,201",
  jsonSamplesExpandLevel: 2,
  sortTagsAlphabetically: false,
  showExtensions: ["x-error-codes"],
  pathInMiddlePanel: true,
  hideDownloadButton: false,
  theme: {
    typography: { fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", headings: { fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" } },
  },
};

// "</script" inside the inlined JSON or bundle would end the script element early.
const safe = (s) => s.replace(/<\/script/gi, "<\\/script");
const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Redoc ${version} (api/reference.mjs)">
<title>${spec.info.title} reference (${spec.info.version})</title>
<link rel="icon" href="data:,">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:; worker-src blob:">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<div id="redoc"></div>
<script>${safe(bundle)}</script>
<script>
Redoc.init(${safe(JSON.stringify(spec))}, ${JSON.stringify(options)}, document.getElementById("redoc"));
</script>
</body>
</html>
`;
writeFileSync(new URL("./reference.html", import.meta.url), html);
console.log(`reference.mjs: wrote api/reference.html (${Math.round(html.length / 1024)} KiB, Redoc ${version})`);
