import { defineRoute } from '../../../../src/routes/types.ts';

export const UPLOAD_LIMIT = 64 * 1024;

/** A route with its own body limit that streams the body, counting bytes without keeping them. */
export default defineRoute({
  auth: 'none',
  bodyLimit: UPLOAD_LIMIT,
  async POST(request) {
    let bytes = 0;
    const reader = request.body?.getReader();
    for (;;) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      bytes += chunk.value.byteLength;
    }
    return Response.json({ bytes });
  },
});
