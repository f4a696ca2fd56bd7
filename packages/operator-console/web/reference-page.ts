/** The console's API reference page (`/console/reference`): every route of the API's OpenAPI document (`GET /openapi.json`), rendered as a table. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { referenceRows, type ReferenceRow } from "./reference-rows.js";

/** The page: loads `/openapi.json` once and shows one table row per operation; a failed load says so and links the raw document. */
export function ReferencePage() {
  const [rows, setRows] = useState<ReferenceRow[] | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    fetch("/openapi.json", { credentials: "same-origin" })
      .then(async (r) => {
        if (!r.ok) throw new Error(`GET /openapi.json answered ${r.status}`);
        setRows(referenceRows(await r.json()));
      })
      .catch((e: unknown) => setFailed(e instanceof Error ? e.message : String(e)));
  }, []);
  if (failed)
    return html`<p role="alert">
      Could not load the API description: ${failed}. The raw document: <a href="/openapi.json">/openapi.json</a>.
    </p>`;
  if (!rows) return html`<p class="loading" role="status">Loading the API reference…</p>`;
  return html`
    <h1>API reference</h1>
    <p>
      Every route of the API, from its OpenAPI 3.1 document (<a href="/openapi.json">/openapi.json</a>). Each refusal lists its stable error
      codes; docs/errors.md says what each means and what to do next.
    </p>
    <table class="reference" data-testid="api-reference">
      <thead>
        <tr>
          <th scope="col">method</th>
          <th scope="col">path</th>
          <th scope="col">operation</th>
          <th scope="col">auth</th>
          <th scope="col">refusals</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr data-operation-id=${r.operationId}>
              <td>${r.method}</td>
              <td><code>${r.path}</code></td>
              <td title=${r.description}>${r.operationId}</td>
              <td>${r.auth}</td>
              <td>${r.refusals.map((f) => html`<div><strong>${f.status}</strong> ${f.codes.join(", ")}</div>`)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  `;
}
