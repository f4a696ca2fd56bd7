import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call } from "./api.js";
import { ActionsPanel } from "./actions.js";
import { ATTENTION_LABELS, json, when } from "./format.js";
import { navigate } from "./router.js";
import type { EffectDetail } from "./types.js";

/** One entry of the timeline: when, what kind, a heading and its body. */
interface TimelineEntry {
  atMs: number;
  kind: "intent" | "attempt" | "lookup" | "action" | "compensation" | "terminal";
  key: string;
  body: unknown;
}

/** Builds the effect's history in time order (ties keep this order: intent, attempts, lookups, actions, compensations, terminal states). */
function timeline(e: EffectDetail): TimelineEntry[] {
  const items: TimelineEntry[] = [];
  items.push({
    atMs: e.createdAtMs,
    kind: "intent",
    key: "intent",
    body: html`<h3>Intent written</h3>
      <p>${e.serverId} · ${e.toolName} · idempotency key <span class="mono">${e.idempotencyKey}</span></p>
      <p>Request fingerprint <span class="mono">${e.requestFingerprint}</span></p>
      <details>
        <summary>Arguments</summary>
        <pre data-testid="arguments">${json(e.arguments)}</pre>
      </details>`,
  });
  for (const a of e.attempts) {
    items.push({
      atMs: a.startedAtMs,
      kind: "attempt",
      key: `attempt-${a.attempt}`,
      body: html`<h3>Attempt ${a.attempt}: ${a.status}</h3>
        <p>Connection <span class="mono">${a.connectionId}</span>; started ${when(a.startedAtMs)}, finished ${when(a.finishedAtMs)}</p>
        ${a.unknownReason ? html`<p>Why unknown: ${a.unknownReason}</p>` : null}`,
    });
  }
  for (const l of e.reconciliations) {
    items.push({
      atMs: l.startedAtMs,
      kind: "lookup",
      key: `lookup-${l.id}`,
      body: html`<h3>Lookup (${l.trigger}): ${l.outcome}${l.reasonCode ? ` · ${l.reasonCode}` : ""}</h3>
        <p>
          Adapter ${l.adapterId}@${l.adapterVersion}; finished
          ${when(l.finishedAtMs)}${l.nextLookupAtMs ? `; next lookup ${when(l.nextLookupAtMs)}` : ""}
        </p>
        ${l.error ? html`<p>Error: ${l.error}</p>` : null}
        ${
          l.receipt
            ? html`<details>
                <summary>Receipt</summary>
                <pre>${json(l.receipt)}</pre>
              </details>`
            : null
        }`,
    });
  }
  for (const a of e.operatorActions) {
    items.push({
      atMs: a.createdAtMs,
      kind: "action",
      key: `action-${a.id}`,
      body: html`<h3>Operator ${a.action} by ${a.actor}: ${a.outcome}</h3>
        <p>${a.statusBefore} → ${a.statusAfter}</p>
        <p>Reason: ${a.reason}</p>
        ${
          a.receipt
            ? html`<details open>
                <summary>Receipt the operator supplied</summary>
                <pre>${json(a.receipt)}</pre>
              </details>`
            : null
        }
        ${a.compensationEffectId ? html`<p>Compensation <a href=${`/console/effects/${a.compensationEffectId}`} onClick=${(ev: MouseEvent) => navigate(`/console/effects/${a.compensationEffectId}`, ev)}>${a.compensationEffectId}</a></p>` : null}`,
    });
  }
  for (const c of e.compensations) {
    items.push({
      atMs: c.createdAtMs,
      kind: "compensation",
      key: `comp-${c.id}`,
      body: html`<h3>
          Compensation
          <a href=${`/console/effects/${c.id}`} onClick=${(ev: MouseEvent) => navigate(`/console/effects/${c.id}`, ev)}>${c.id}</a>:
          ${c.status}
        </h3>
        <p>${c.serverId} · ${c.toolName}</p>`,
    });
  }
  if (e.command) {
    items.push({
      atMs: e.command.updatedAtMs ?? e.updatedAtMs,
      kind: "terminal",
      key: "command",
      body: html`<h3>Command: ${e.command.status}</h3>
        <p class="mono">${e.command.id}</p>
        ${e.command.error ? html`<pre>${json(e.command.error)}</pre>` : null}`,
    });
  }
  if (e.run) {
    items.push({
      atMs: e.run.updatedAtMs ?? e.updatedAtMs,
      kind: "terminal",
      key: "run",
      body: html`<h3>Run: ${e.run.status}</h3>
        <p class="mono">${e.run.id}</p>
        ${e.run.error ? html`<pre>${json(e.run.error)}</pre>` : null}`,
    });
  }
  return items
    .map((item, i) => ({ item, i }))
    .sort((a, b) => a.item.atMs - b.item.atMs || a.i - b.i)
    .map(({ item }) => item);
}

/** One effect: its current state, its timeline, and the operator's actions (reloaded on every live update). */
export function EffectPage({ effectId, changeSeq }: { effectId: string; changeSeq: number }) {
  const [effect, setEffect] = useState<EffectDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reloadSeq, setReloadSeq] = useState(0);

  useEffect(() => {
    void call("consoleShow", { params: { effectId } }).then((r) => {
      if (r.ok) {
        setEffect(r.data);
        setError(null);
      } else setError(`${r.code}: ${r.message}`);
    });
  }, [effectId, changeSeq, reloadSeq]);

  if (error)
    return html`<p class="error" role="alert">${error}</p>
      <p><a href="/console" onClick=${(e: MouseEvent) => navigate("/console", e)}>Back to the list</a></p>`;
  if (!effect || effect.id !== effectId) return html`<p role="status">Loading effect ${effectId}…</p>`;
  return html`
    <p><a href="/console" onClick=${(e: MouseEvent) => navigate("/console", e)}>← Unknown effects</a></p>
    <h1>Effect <span class="mono">${effect.id}</span></h1>
    <dl class="facts" data-testid="facts">
      <div>
        <dt>Status</dt>
        <dd>
          <span class=${`badge badge-${effect.status}`} data-testid="status">${effect.status}</span
          >${effect.resolution ? ` (resolution: ${effect.resolution})` : ""}
        </dd>
      </div>
      <div>
        <dt>Server · tool</dt>
        <dd>${effect.serverId} · <span data-testid="tool">${effect.toolName}</span></dd>
      </div>
      <div>
        <dt>Run</dt>
        <dd class="mono">${effect.runId}</dd>
      </div>
      <div>
        <dt>Driver instance</dt>
        <dd class="mono">${effect.driverInstanceId}</dd>
      </div>
      <div>
        <dt>Attention</dt>
        <dd>${effect.operatorAttention ? (ATTENTION_LABELS[effect.operatorAttention] ?? effect.operatorAttention) : "—"}</dd>
      </div>
      <div>
        <dt>Lookups</dt>
        <dd>${effect.lookupCount}; next ${when(effect.nextLookupAtMs)}</dd>
      </div>
      ${
        effect.compensatesEffectId
          ? html`<div>
              <dt>Compensates</dt>
              <dd>
                <a
                  href=${`/console/effects/${effect.compensatesEffectId}`}
                  onClick=${(ev: MouseEvent) => navigate(`/console/effects/${effect.compensatesEffectId}`, ev)}
                  >${effect.compensatesEffectId}</a
                >
              </dd>
            </div>`
          : null
      }
    </dl>
    ${
      effect.result !== null
        ? html`<section aria-labelledby="result-h">
            <h2 id="result-h">Result</h2>
            <pre data-testid="result">${json(effect.result)}</pre>
            ${
              effect.providerReceipt
                ? html`<h3>Provider receipt</h3>
                    <pre data-testid="provider-receipt">${json(effect.providerReceipt)}</pre>`
                : null
            }
            ${
              effect.reconciliationReceipt
                ? html`<h3>Reconciliation receipt</h3>
                    <pre>${json(effect.reconciliationReceipt)}</pre>`
                : null
            }
          </section>`
        : null
    }
    <${ActionsPanel} effect=${effect} onDone=${() => setReloadSeq((n) => n + 1)} />
    <section aria-labelledby="timeline-h">
      <h2 id="timeline-h">Timeline</h2>
      <ol class="timeline" data-testid="timeline">
        ${timeline(effect).map((t) => html`<li key=${t.key} class=${`tl tl-${t.kind}`} data-kind=${t.kind}><time>${when(t.atMs)}</time>${t.body}</li>`)}
      </ol>
    </section>
  `;
}
