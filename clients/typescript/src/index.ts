// The Rental Platform API's TypeScript client: openapi-fetch over the types openapi-typescript
// generates from api/openapi.yaml (src/schema.d.ts; `make generate` regenerates it). Every
// path, parameter, body and answer is typed; an error answer is the error envelope.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, paths, webhooks } from "./schema.js";

export type { components, paths, webhooks };
/** The API's named schemas: `Schemas["PaymentRequest"]`, `Schemas["Error"]`, … */
export type Schemas = components["schemas"];
export type RentalClient = Client<paths>;

export interface RentalClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** A secret or restricted key: sk_test_…, sk_live_…, rk_test_…, rk_live_…. */
  apiKey: string;
  /** The gateway; the local platform's by default. */
  baseUrl?: string;
}

/** A client authenticated with apiKey. */
export function createRentalClient({ apiKey, baseUrl = "http://127.0.0.1:8080", headers, ...rest }: RentalClientOptions): RentalClient {
  return createClient<paths>({
    baseUrl,
    headers: { ...headers, Authorization: `Bearer ${apiKey}` },
    ...rest,
  });
}
