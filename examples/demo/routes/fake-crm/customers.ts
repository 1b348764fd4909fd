/** GET /routes/fake-crm/customers?email= — the demo CRM's lookup, used by the `crm` provider's findCustomer method. */
import { defineRoute } from 'mercato';
import { crmAuth, customers } from '../_fake-crm-data.ts';

export default defineRoute({
  auth: (request) => crmAuth(request),
  GET(request) {
    const email = new URL(request.url).searchParams.get('email');
    return Response.json(customers.find((c) => c.email === email) ?? null);
  },
});
