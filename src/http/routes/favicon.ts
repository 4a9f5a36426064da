import type { FastifyInstance } from 'fastify';

/**
 * The service's icon, for the docs page and the portal: a paw in the portal's colour, drawn
 * here so that no page asks another site for one, and no browser meets a 404 for
 * `/favicon.ico`. Chromium and Firefox draw an SVG served at that address too.
 */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
<rect width="64" height="64" rx="14" fill="#1f5f8b"/>
<g fill="#fff">
<ellipse cx="32" cy="42" rx="13" ry="11"/>
<ellipse cx="15" cy="28" rx="5.5" ry="7"/>
<ellipse cx="49" cy="28" rx="5.5" ry="7"/>
<ellipse cx="24" cy="16" rx="5.5" ry="7"/>
<ellipse cx="40" cy="16" rx="5.5" ry="7"/>
</g>
</svg>
`;

export async function faviconRoutes(app: FastifyInstance): Promise<void> {
  const options = { schema: { hide: true } };
  for (const path of ['/favicon.svg', '/favicon.ico']) {
    app.get(path, options, (_request, reply) => {
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400');
      return ICON;
    });
  }
}
