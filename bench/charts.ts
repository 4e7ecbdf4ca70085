/** A line chart as SVG, with no dependency: the bench's figures over time (requests per second, memory). */

export interface Series {
  label: string;
  color: string;
  points: [number, number][];
}

const COLORS = ["#1f618d", "#b03a2e", "#1e8449", "#7d3c98", "#b9770e"];
export const colorOf = (i: number) => COLORS[i % COLORS.length];

/** A round axis maximum: 1, 2 or 5 times a power of ten, at least `v`. */
function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 1.5, 2, 3, 4, 5, 6, 8, 10].map((m) => m * p).find((m) => m >= v)!;
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const width = 720;
  const height = 340;
  const left = 64;
  const right = 16;
  const top = 40;
  const bottom = 280;
  const xMax = niceMax(Math.max(1, ...series.flatMap((s) => s.points.map(([x]) => x))));
  const yMax = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map(([, y]) => y))));
  const x = (v: number) => left + (v / xMax) * (width - left - right);
  const y = (v: number) => bottom - (v / yMax) * (bottom - top);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<text x="${left}" y="20" font-size="14">${title}</text>`,
    `<line x1="${left}" y1="${bottom}" x2="${width - right}" y2="${bottom}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const yv = (yMax * i) / 4;
    const xv = (xMax * i) / 4;
    parts.push(
      `<line x1="${left}" y1="${y(yv)}" x2="${width - right}" y2="${y(yv)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(yv) + 4}" text-anchor="end">${+yv.toPrecision(3)}</text>`,
      `<text x="${x(xv)}" y="${bottom + 16}" text-anchor="middle">${+xv.toPrecision(3)}</text>`,
    );
  }
  parts.push(
    `<text x="${(left + width - right) / 2}" y="${bottom + 34}" text-anchor="middle">${xLabel}</text>`,
    `<text x="14" y="${(top + bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 ${
      (top + bottom) / 2
    })">${yLabel}</text>`,
  );
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map(([px, py], i) => `${i ? "L" : "M"}${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(" ");
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`);
  }
  series.forEach((s, i) => {
    const lx = left + i * 150;
    parts.push(
      `<rect x="${lx}" y="${height - 16}" width="10" height="10" fill="${s.color}"/>`,
      `<text x="${lx + 14}" y="${height - 7}">${s.label}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
