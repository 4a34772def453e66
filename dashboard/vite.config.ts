import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'
import { fileURLToPath } from 'node:url'

/** recharts and the packages it pulls in. */
const CHARTS =
  /[\\/]node_modules[\\/](recharts|d3-[^\\/]+|victory-vendor|@reduxjs|redux|reselect|immer|decimal\.js-light|es-toolkit|eventemitter3|react-redux|use-sync-external-store|react-is)[\\/]/

// The dashboard is built into dist/dashboard and served by the collector under /.
export default defineConfig(({ command }) => {
  // A build is always React's production build, whatever NODE_ENV the caller has: one started with NODE_ENV=test
  // (from inside vitest) bundled React's development build (1.1 MB instead of 0.78 MB), and the fleet page's
  // first load took twice as long.
  if (command === 'build') process.env.NODE_ENV = 'production'
  return {
    root: fileURLToPath(new URL('.', import.meta.url)),
    base: './',
    plugins: [react()],
    build: {
      outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
      emptyOutDir: true,
      chunkSizeWarningLimit: 1500,
      // Pages load on first visit (dashboard/src/app.tsx); recharts and what it pulls in go in one chunk of their
      // own, shared by every page with a chart, rather than a dozen small ones.
      rollupOptions: {
        output: {
          manualChunks(id: string) {
            // React gets a chunk of its own too: otherwise Rollup moves it into the charts chunk (a manual chunk takes
            // its dependencies along) and the entry would load recharts after all.
            if (/[\\/]node_modules[\\/](react|react-dom|scheduler)[\\/]/.test(id)) return 'react'
            if (CHARTS.test(id)) return 'charts'
            return undefined
          },
        },
      },
    },
  }
})
