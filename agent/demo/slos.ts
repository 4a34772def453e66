/**
 * SLOs for the demo fleet, in tailguard's YAML format. They tell a story: the chat SLOs and
 * `demo-vision-latency` are healthy, `demo-vision-tail` is set tight on purpose (its description says so) so
 * that its budget burns at about 10× and the 6× page alert fires within minutes. `tailguard start` writes them to
 * `<data-dir>/demo-slos.yaml` on first run (a file the user can edit: it is reloaded on change).
 *
 * @example writeFileSync(join(dataDir, 'demo-slos.yaml'), DEMO_SLOS_YAML)
 */
export const DEMO_SLOS_YAML = `# SLOs of the demo fleet (tailguard format, version 1). Edit me: tailguard reloads this file on change.
version: 1
slos:
  - name: demo-chat-ttft
    description: 95% of chat requests see their first token within 2 s
    kind: llm
    selector: { service: demo-chat }
    metric: ttft
    thresholdMs: 2000
    objective: 95%
    window: 30d
  - name: demo-chat-tpot
    description: 99% of chat requests stream at 40 ms per output token or better
    kind: llm
    selector: { service: demo-chat }
    metric: tpot
    thresholdMs: 40
    objective: 99%
    window: 30d
  - name: demo-chat-availability
    kind: availability
    selector: { service: demo-chat }
    objective: 99.5%
    window: 28d
  - name: demo-vision-latency
    description: 99% of vision requests finish within 60 ms (healthy)
    kind: latency
    selector: { service: demo-vision }
    phase: total
    thresholdMs: 60
    objective: 99%
    window: 7d
  - name: demo-vision-tail
    description: "Set tight on purpose to show alerting: 99.9% within 25 ms, while 1% of vision requests hit a slow kernel"
    kind: latency
    selector: { service: demo-vision }
    phase: total
    thresholdMs: 25
    objective: 99.9%
    window: 7d
`
