/** The route contract lives with the rest of the app contract (app/routes.ts); re-exported for the routes capability. */
export * from '../app/routes.ts';
