/** GET /routes/fake-crm/ping — the demo CRM's health endpoint, used by the `crm` provider's checker. */
import { defineRoute } from 'mercato';
import { crmAuth } from '../_fake-crm-data.ts';

export default defineRoute({
  auth: (request) => crmAuth(request),
  GET: () => Response.json({ ok: true }),
});
