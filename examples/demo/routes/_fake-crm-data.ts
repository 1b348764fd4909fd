/** Data of the demo's fake CRM (a file starting with `_` is never served as a route). */
export const FAKE_CRM_API_KEY = 'demo-crm-key';

export const customers = [
  { id: 'c_1', email: 'ada@example.com', name: 'Ada Lovelace' },
  { id: 'c_2', email: 'alan@example.com', name: 'Alan Turing' },
];

/** The fake CRM accepts only requests carrying its API key. */
export function crmAuth(request: Request): true | Response {
  if (request.headers.get('x-api-key') === FAKE_CRM_API_KEY) return true;
  return Response.json({ error: 'invalid API key' }, { status: 401 });
}
