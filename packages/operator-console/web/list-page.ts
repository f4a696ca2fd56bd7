import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call, type ConsoleSent } from "./api.js";
import { LookupOutcomeChart, UnknownOverTimeChart } from "./charts.js";
import { age, ATTENTION_LABELS, when } from "./format.js";
import { navigate } from "./router.js";
import type { ConsoleStats, EffectPage } from "./types.js";

/** The list's filters, kept in the page's query string (so a filtered view can be bookmarked). */
const FILTERS = ["status", "serverId", "toolName", "toolCallId", "runId", "minAgeMs", "attention"] as const;

/** The status filter's choices: empty is the service's default (unknown; every status with a run, tool call or attention filter). */
const STATUS_OPTIONS: Array<[string, string]> = [
  ["", "default (unknown; all for a run or tool call)"],
  ["any", "any status"],
  ["unknown", "unknown"],
  ["executing", "executing"],
  ["intent", "intent"],
  ["succeeded", "succeeded"],
  ["not_executed", "not_executed"],
];

const AGE_OPTIONS: Array<[string, string]> = [
  ["", "any age"],
  ["60000", "older than 1 min"],
  ["300000", "older than 5 min"],
  ["3600000", "older than 1 h"],
  ["86400000", "older than 1 day"],
];

/**
 * The effect list (unknown ones by default): filters (status, server, tool, tool call id, run, age, attention reason), counts by attention
 * reason, one page at a time with the service's cursor, the two charts. Reloads its data whenever
 * `changeSeq` moves (a live update).
 */
export function ListPage({ search, changeSeq }: { search: string; changeSeq: number }) {
  const params = new URLSearchParams(search);
  const [page, setPage] = useState<EffectPage | null>(null);
  const [stats, setStats] = useState<ConsoleStats | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());

  useEffect(() => {
    const q = new URLSearchParams();
    for (const k of [...FILTERS, "cursor"]) {
      const v = params.get(k);
      if (v) q.set(k, v);
    }
    q.set("limit", "25");
    // the filters come from the page's URL, as typed: the API checks them (400 request.invalid shows as the error line)
    void call("consoleList", { query: Object.fromEntries(q) as ConsoleSent<"consoleList", "query"> }).then((r) => {
      setNow(Date.now());
      if (r.ok) {
        setPage(r.data);
        setError(null);
      } else setError(`${r.code}: ${r.message}`);
    });
    void call("consoleStats", {}).then((r) => r.ok && setStats(r.data));
  }, [search, changeSeq]);

  const onFilter = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const q = new URLSearchParams();
    for (const k of FILTERS) {
      const v = String(form.get(k) ?? "").trim();
      if (v) q.set(k, v);
    }
    navigate(`/console${q.size ? `?${q}` : ""}`);
  };
  const withCursor = (cursor: string | null) => {
    const q = new URLSearchParams(params);
    if (cursor) q.set("cursor", cursor);
    else q.delete("cursor");
    return `/console${q.size ? `?${q}` : ""}`;
  };
  const filtered = FILTERS.some((k) => params.get(k));

  return html`
    <h1>Unknown effects</h1>
    <p class="lede">
      Writes whose outcome nobody knows yet. They are fenced: nothing retries them. Open one to read its history and settle it.
    </p>
    <section aria-labelledby="counts-h" class="counts">
      <h2 id="counts-h">Counts by attention reason</h2>
      ${
        stats
          ? html`<ul class="count-list" data-testid="counts">
              <li><span class="count-n">${stats.unknownTotal}</span> unknown in all</li>
              ${stats.byAttention.map((b) => html`<li><span class="count-n">${b.count}</span> ${b.reason ?? "waiting for lookups (no attention reason)"}</li>`)}
            </ul>`
          : html`<p>Loading counts…</p>`
      }
    </section>
    <form class="filters" onSubmit=${onFilter} aria-labelledby="filters-h">
      <h2 id="filters-h">Filters</h2>
      <div class="filter-grid">
        <label
          >Status
          <select name="status">
            ${STATUS_OPTIONS.map(([v, label]) => html`<option value=${v} selected=${(params.get("status") ?? "") === v}>${label}</option>`)}
          </select>
        </label>
        <label>Server <input name="serverId" value=${params.get("serverId") ?? ""} autocomplete="off" /></label>
        <label>Tool <input name="toolName" value=${params.get("toolName") ?? ""} autocomplete="off" /></label>
        <label>Tool call id <input name="toolCallId" value=${params.get("toolCallId") ?? ""} autocomplete="off" /></label>
        <label>Run id <input name="runId" value=${params.get("runId") ?? ""} autocomplete="off" /></label>
        <label
          >Age
          <select name="minAgeMs">
            ${AGE_OPTIONS.map(([v, label]) => html`<option value=${v} selected=${(params.get("minAgeMs") ?? "") === v}>${label}</option>`)}
          </select>
        </label>
        <label
          >Attention reason
          <select name="attention">
            <option value="">any</option>
            ${Object.keys(ATTENTION_LABELS).map((v) => html`<option value=${v} selected=${params.get("attention") === v}>${v}</option>`)}
          </select>
        </label>
      </div>
      <button type="submit">Apply filters</button>
      ${filtered ? html` <a href="/console" onClick=${(e: MouseEvent) => navigate("/console", e)}>Clear filters</a>` : null}
    </form>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <section aria-labelledby="list-h">
      <h2 id="list-h">Effects${params.get("cursor") ? " (later page)" : ""}</h2>
      ${
        page === null
          ? html`<p>Loading…</p>`
          : page.effects.length === 0
            ? html`<p data-testid="empty">No ${filtered ? "effect matches these filters" : "unknown effect"}.</p>`
            : html`<div class="table-wrap">
                <table data-testid="effects">
                  <caption class="visually-hidden">
                    Effects, newest first
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Effect</th>
                      <th scope="col">Status</th>
                      <th scope="col">Server</th>
                      <th scope="col">Tool</th>
                      <th scope="col">Tool call</th>
                      <th scope="col">Run</th>
                      <th scope="col">Age</th>
                      <th scope="col">Attention</th>
                      <th scope="col">Lookups</th>
                      <th scope="col">Next lookup</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${page.effects.map(
                      (e) =>
                        html`<tr data-effect-id=${e.id}>
                          <td>
                            <a href=${`/console/effects/${e.id}`} onClick=${(ev: MouseEvent) => navigate(`/console/effects/${e.id}`, ev)}
                              >${e.id}</a
                            >
                          </td>
                          <td data-testid="row-status">${e.status}</td>
                          <td>${e.serverId}</td>
                          <td>${e.toolName}</td>
                          <td class="mono">${e.toolCallId}</td>
                          <td class="mono">${e.runId}</td>
                          <td>${age(now - e.createdAtMs)}</td>
                          <td>${e.operatorAttention ?? "—"}</td>
                          <td>${e.lookupCount}</td>
                          <td>${when(e.nextLookupAtMs)}</td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>`
      }
      <nav class="pager" aria-label="Pages">
        ${params.get("cursor") ? html`<a href=${withCursor(null)} onClick=${(e: MouseEvent) => navigate(withCursor(null), e)}>First page</a>` : null}
        ${page?.nextCursor ? html`<a href=${withCursor(page.nextCursor)} onClick=${(e: MouseEvent) => navigate(withCursor(page.nextCursor), e)}>Next page</a>` : null}
      </nav>
    </section>
    <section aria-labelledby="charts-h" class="charts">
      <h2 id="charts-h">Charts</h2>
      ${stats ? html`<${UnknownOverTimeChart} series=${stats.unknownSeries} /><${LookupOutcomeChart} rows=${stats.lookupOutcomes} />` : null}
    </section>
  `;
}
