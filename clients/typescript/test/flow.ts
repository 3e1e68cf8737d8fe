// The end-to-end flow of the TypeScript client, run by deploy/local/e2e (TestTypeScriptClientFlow)
// against a started platform: a webhook endpoint, a payment agreement, a payment request
// collected, its events listed and their deliveries. It prints one JSON line of what it made,
// which the Go test checks against what its receiver got.
import { createRentalClient, type Schemas } from "../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function fail(what: string, detail: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await sleep(200);
  }
}

const api = createRentalClient({ apiKey: env("RENTAL_API_KEY"), baseUrl: env("RENTAL_API_BASE") });

const endpoint = await api.POST("/v1/webhook_endpoints", {
  params: { header: { "Idempotency-Key": "ts-client-endpoint" } },
  body: { url: env("RENTAL_HOOK_URL"), enabled_events: ["payment_request.succeeded", "charge.succeeded"] },
});
if (!endpoint.data) fail("create endpoint", endpoint.error);

const agreement = await api.POST("/v1/payment_agreements", {
  body: {
    tenant: { name: "Jane Doe", email: "jane@example.com" },
    payment_methods: [{ type: "card", token: "tok_test_success", preferred: true }],
  },
});
if (!agreement.data) fail("create agreement", agreement.error);

const bad = await api.POST("/v1/payment_requests", {
  body: { payment_agreement: agreement.data.id, amount: 0, currency: "eur" },
});
if (bad.error?.error.code !== "parameter_invalid" || bad.error.error.param !== "amount") fail("amount 0", bad.error);

const created = await api.POST("/v1/payment_requests", {
  body: { payment_agreement: agreement.data.id, amount: 125000, currency: "eur", description: "November rent" },
});
if (!created.data) fail("create request", created.error);
const requestId = created.data.id;

const collected: Schemas["PaymentRequest"] = await until("collection", async () => {
  const r = await api.GET("/v1/payment_requests/{id}", { params: { path: { id: requestId } } });
  if (!r.data) fail("retrieve", r.error);
  return r.data.status === "succeeded" ? r.data : undefined;
});
const charge = collected.attempt_log[0];
if (collected.attempt_log.length !== 1 || !charge || charge.outcome !== "succeeded") fail("attempt log", collected.attempt_log);

const succeeded = await until("the payment_request.succeeded event", async () => {
  const list = await api.GET("/v1/events", {
    params: { query: { "types[]": ["payment_request.succeeded", "charge.succeeded"], limit: 100 } },
  });
  if (!list.data) fail("list events", list.error);
  return list.data.data.find((e) => e.type === "payment_request.succeeded" && e.data.object.id === requestId);
});

await until("the event's delivery", async () => {
  const d = await api.GET("/v1/events/{id}/deliveries", { params: { path: { id: succeeded.id } } });
  if (!d.data) fail("list deliveries", d.error);
  return d.data.data.find((x) => x.status === "succeeded" && x.webhook_endpoint === endpoint.data.id);
});

console.log(
  JSON.stringify({
    endpoint: endpoint.data.id,
    secret: endpoint.data.secret,
    payment_request: requestId,
    charge: charge.id,
    event: succeeded.id,
  }),
);
