import { defineRoute } from '../../../../../src/routes/types.ts';
import { fail } from '../_json.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path parameter checked by the route: not a UUID → 400, any UUID → 404 (there are no items). */
export default defineRoute({
  auth: 'none',
  GET: (_request, ctx) => (UUID_RE.test(ctx.params.id!) ? fail(404, 'no such item') : fail(400, 'id must be a UUID')),
  DELETE: (_request, ctx) => (UUID_RE.test(ctx.params.id!) ? new Response(null, { status: 204 }) : fail(400, 'id must be a UUID')),
});
