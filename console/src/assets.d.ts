// esbuild bundles the stylesheet imported by main.ts into app.css.
declare module '*.css';
