// tare's charts: each element of TARE.charts names a container (id), a kind and its data, prepared by
// the Go side (internal/htmlreport). Drawn with the embedded ECharts, SVG renderer, no animation; a
// drawn chart's container gets data-rendered="true", and body data-charts the number of charts.
(function () {
  'use strict';
  const palette = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  const mc = (v) => (v == null || isNaN(v) ? '–' : (Math.abs(v) < 10 ? v.toFixed(1) : v.toFixed(0)) + 'm');
  // Four significant digits, trailing zeros after the point dropped (1200 stays 1200).
  const num = (v) => (v == null || isNaN(v) ? '–' : Number(v).toPrecision(4).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, ''));
  const whole = (v) => (v != null && Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : num(v));
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

  // busy: node busy over time with the groups stacked under it and spikes shaded.
  function busy(d) {
    const series = d.groups.map((g) => ({
      name: g.name, type: 'line', stack: 'groups', step: 'start', symbol: 'none', sampling: 'lttb',
      areaStyle: { opacity: 0.85 }, lineStyle: { width: 0 }, emphasis: { focus: 'series' },
      data: d.times.map((t, i) => [t, g.series[i]]),
    }));
    series.push({
      name: 'node busy', type: 'line', step: 'start', symbol: 'none', z: 5,
      lineStyle: { color: '#1d2330', width: 1.4 }, itemStyle: { color: '#1d2330' },
      data: d.times.map((t, i) => [t, d.node[i]]),
      markArea: {
        silent: false, itemStyle: { color: 'rgba(214, 69, 61, 0.16)' }, label: { show: true, position: 'insideTop', color: '#b3302a', fontSize: 10 },
        data: d.spikes.map((s) => [{ name: s.label, xAxis: s.from }, { xAxis: s.to }]),
      },
      markLine: d.threshold > 0 ? {
        symbol: 'none', silent: true, lineStyle: { type: 'dashed', color: '#b3302a' },
        label: { formatter: 'spike threshold ' + mc(d.threshold), position: 'insideEndTop', fontSize: 10 },
        data: [{ yAxis: d.threshold }],
      } : undefined,
    });
    return {
      color: palette, animation: false,
      tooltip: { trigger: 'axis', valueFormatter: mc, order: 'valueDesc' },
      legend: { type: 'scroll', top: 0 },
      grid: { left: 64, right: 24, top: 36, bottom: 64 },
      xAxis: { type: 'time' },
      yAxis: { type: 'value', name: 'millicores', nameGap: 12, axisLabel: { formatter: (v) => v + 'm' } },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 18, bottom: 12 }],
      series,
    };
  }

  // flame: a CPU profile's flame graph, the root at the bottom, width proportional to CPU.
  function flame(d) {
    const color = (name) => {
      let h = 2166136261;
      for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
      return 'rgb(' + (205 + h % 50) + ',' + (80 + (h >>> 8) % 130) + ',' + (40 + (h >>> 16) % 50) + ')';
    };
    return {
      animation: false,
      tooltip: {
        formatter: (p) => {
          const f = d.frames[p.dataIndex];
          const ms = f[2] - f[1];
          return esc(f[3]) + '<br>' + ms.toFixed(1) + ' ms, ' + (100 * ms / d.total).toFixed(2) + '% of the profile';
        },
      },
      grid: { left: 4, right: 4, top: 4, bottom: 4 },
      xAxis: { type: 'value', show: false, min: 0, max: d.total },
      yAxis: { type: 'value', show: false, min: -0.5, max: d.depth + 0.5 },
      series: [{
        type: 'custom', encode: { x: [1, 2], y: 0 },
        data: d.frames.map((f) => [f[0], f[1], f[2]]),
        renderItem: (params, api) => {
          const f = d.frames[params.dataIndex];
          const a = api.coord([f[1], f[0]]);
          const b = api.coord([f[2], f[0]]);
          const h = api.size([0, 1])[1];
          const w = Math.max(b[0] - a[0] - 0.5, 0.5);
          const item = { type: 'rect', shape: { x: a[0], y: a[1] - h / 2, width: w, height: Math.max(h - 1, 1), r: 1 }, style: { fill: color(f[3]) } };
          if (w > 28) {
            item.textContent = { style: { text: f[3], fill: '#1d2330', fontSize: 11, width: w - 6, overflow: 'truncate', ellipsis: '..' } };
            item.textConfig = { position: 'insideLeft' };
          }
          return item;
        },
      }],
    };
  }

  // box: each variant's trials, a box (quartiles, whiskers to min and max) with every trial as a dot.
  function box(d) {
    const names = d.variants.map((v) => v.name);
    const dots = [];
    d.variants.forEach((v, i) => v.values.forEach((x) => dots.push([i, x])));
    return {
      color: palette, animation: false,
      tooltip: { trigger: 'item' },
      grid: { left: 70, right: 20, top: 24, bottom: 36 },
      xAxis: { type: 'category', data: names },
      yAxis: { type: 'value', name: d.unit, scale: true, nameGap: 10 },
      series: [
        { name: 'trials', type: 'boxplot', data: d.variants.map((v) => v.box), itemStyle: { color: '#dfe8f7', borderColor: '#2f6fd6' },
          tooltip: { formatter: (p) => esc(p.name) + '<br>min ' + num(p.value[1]) + ', q1 ' + num(p.value[2]) + ', median ' + num(p.value[3]) + ', q3 ' + num(p.value[4]) + ', max ' + num(p.value[5]) } },
        { name: 'trial', type: 'scatter', data: dots, symbolSize: 7, itemStyle: { color: '#e15759', opacity: 0.8 },
          tooltip: { formatter: (p) => esc(names[p.value[0]]) + ': ' + num(p.value[1]) + ' ' + esc(d.unit) } },
      ],
    };
  }

  // sweep: the primary metric's median against the swept value, with its interval as error bars.
  function sweep(d) {
    const names = d.points.map((p) => p.value);
    return {
      animation: false,
      tooltip: { trigger: 'axis' },
      grid: { left: 70, right: 24, top: 28, bottom: 48 },
      xAxis: { type: 'category', data: names, name: d.flag, nameLocation: 'middle', nameGap: 30 },
      yAxis: { type: 'value', name: d.unit, scale: true },
      series: [
        { name: 'median', type: 'line', symbolSize: 9, data: d.points.map((p) => ({ value: p.median, itemStyle: { color: p.significant ? '#d6453d' : '#2f6fd6' } })),
          lineStyle: { color: '#2f6fd6' }, label: { show: true, formatter: (p) => num(p.value), position: 'top', fontSize: 10 } },
        { name: 'interval', type: 'custom', data: d.points.map((p, i) => [i, p.lo, p.hi]),
          tooltip: { show: false },
          renderItem: (params, api) => {
            const lo = api.coord([api.value(0), api.value(1)]);
            const hi = api.coord([api.value(0), api.value(2)]);
            const cap = 6;
            const style = { stroke: '#5b6575', lineWidth: 1.2 };
            return { type: 'group', children: [
              { type: 'line', shape: { x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1] }, style },
              { type: 'line', shape: { x1: lo[0] - cap, y1: lo[1], x2: lo[0] + cap, y2: lo[1] }, style },
              { type: 'line', shape: { x1: hi[0] - cap, y1: hi[1], x2: hi[0] + cap, y2: hi[1] }, style },
            ] };
          } },
      ],
    };
  }

  // bars: a horizontal bar per name (API clients by requests per minute).
  function bars(d) {
    const rows = d.rows.slice().reverse();
    return {
      animation: false,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
      grid: { left: 8, right: 40, top: 8, bottom: 24, containLabel: true },
      xAxis: { type: 'value', name: d.unit },
      yAxis: { type: 'category', data: rows.map((r) => r.name), axisLabel: { width: 260, overflow: 'truncate' } },
      series: [{ type: 'bar', data: rows.map((r) => r.value), itemStyle: { color: '#4e79a7' }, label: { show: true, position: 'right', formatter: (p) => num(p.value) } }],
    };
  }

  // stack: a horizontal bar per row (node) split into parts (categories), with a mark per row (node busy).
  function stack(d) {
    const rows = d.rows.slice().reverse();
    const at = (xs) => xs.slice().reverse();
    const series = d.parts.map((p) => ({
      name: p.name, type: 'bar', stack: 'parts', emphasis: { focus: 'series' }, data: at(p.series),
    }));
    series.push({
      name: d.mark, type: 'scatter', symbol: 'rect', symbolSize: [3, 26], itemStyle: { color: '#1d2330' }, z: 5,
      data: at(d.marks).map((v, i) => [v, rows[i]]),
    });
    return {
      color: palette, animation: false,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: mc },
      legend: { type: 'scroll', top: 0 },
      grid: { left: 8, right: 40, top: 36, bottom: 24, containLabel: true },
      xAxis: { type: 'value', name: d.unit, axisLabel: { formatter: (v) => v + 'm' } },
      yAxis: { type: 'category', data: rows, axisLabel: { width: 200, overflow: 'truncate' } },
      series,
    };
  }

  // whisker: a line from a to b (pixel points) with a cap across each end, for an interval.
  function whisker(a, b, style) {
    const cap = 5;
    const across = a[0] === b[0] ? [cap, 0] : [0, cap];
    const end = (p) => ({ type: 'line', shape: { x1: p[0] - across[0], y1: p[1] - across[1], x2: p[0] + across[0], y2: p[1] + across[1] }, style });
    return [{ type: 'line', shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style }, end(a), end(b)];
  }

  // ratios: a row per comparison (lane ÷ baseline): a bar from 1 to the ratio, whiskers over its
  // interval, a dashed line at 1; red where the difference is significant.
  function ratios(d) {
    const rows = d.rows.slice().reverse();
    const colour = (r) => (r.significant ? '#d6453d' : '#2f6fd6');
    return {
      animation: false,
      tooltip: {
        trigger: 'item',
        formatter: (p) => {
          const r = rows[p.dataIndex];
          return esc(r.name) + '<br>ratio to ' + esc(r.against) + ' ' + num(r.ratio) + ', ' + (100 * r.level).toFixed(1) + '% interval [' + num(r.lo) + ', ' + num(r.hi) + ']' +
            '<br>p = ' + num(r.p) + (r.significant ? ' (significant)' : '') + '<br>n = ' + r.n + ' against ' + r.n_base;
        },
      },
      grid: { left: 8, right: 32, top: 16, bottom: 40, containLabel: true },
      xAxis: { type: 'value', scale: true, name: '÷ ' + d.baseline, nameLocation: 'middle', nameGap: 26, axisLabel: { formatter: num } },
      yAxis: { type: 'category', data: rows.map((r) => r.name), axisLabel: { width: 300, overflow: 'truncate' } },
      series: [{
        // The last value, 1, keeps the reference line inside the axis's range.
        type: 'custom', encode: { x: [1, 2, 3, 4], y: 0 },
        data: rows.map((r, i) => [i, r.ratio, r.lo, r.hi, 1]),
        renderItem: (params, api) => {
          const r = rows[params.dataIndex];
          const y = api.value(0);
          const one = api.coord([1, y]);
          const at = api.coord([api.value(1), y]);
          const h = api.size([0, 1])[1] * 0.5;
          const style = { stroke: '#1d2330', lineWidth: 1.2 };
          return { type: 'group', children: [
            { type: 'rect', shape: { x: Math.min(one[0], at[0]), y: at[1] - h / 2, width: Math.max(Math.abs(at[0] - one[0]), 2), height: h },
              style: { fill: colour(r), opacity: 0.8 } },
            ...whisker(api.coord([api.value(2), y]), api.coord([api.value(3), y]), style),
          ] };
        },
        markLine: { symbol: 'none', silent: true, lineStyle: { type: 'dashed', color: '#5b6575' }, label: { show: false }, data: [{ xAxis: 1 }] },
      }],
    };
  }

  // lines: a figure against categories in order, a line per name through its medians, each point's
  // spread as error bars in the line's colour.
  function lines(d) {
    const series = [];
    d.lines.forEach((l, k) => {
      const color = palette[k % palette.length];
      const apart = (k - (d.lines.length - 1) / 2) * 5; // pixels: each line's bars beside the others'
      const at = (api, v) => { const p = api.coord([api.value(0), v]); return [p[0] + apart, p[1]]; };
      series.push({ name: l.name, type: 'line', symbolSize: 8, itemStyle: { color }, lineStyle: { color },
        data: l.points.map((p) => (p ? { value: p.median, lo: p.lo, hi: p.hi, n: p.n } : '-')) });
      series.push({ name: l.name, type: 'custom', tooltip: { show: false }, itemStyle: { color }, encode: { x: 0, y: [1, 2] },
        data: l.points.map((p, i) => (p ? [i, p.lo, p.hi] : null)).filter((x) => x),
        renderItem: (params, api) => ({ type: 'group',
          children: whisker(at(api, api.value(1)), at(api, api.value(2)), { stroke: color, lineWidth: 1.2 }) }) });
    });
    return {
      animation: false,
      tooltip: {
        trigger: 'axis',
        formatter: (ps) => esc(ps[0].axisValue) + ps.filter((p) => p.seriesType === 'line' && p.data && p.data.n)
          .map((p) => '<br>' + p.marker + esc(p.seriesName) + ': ' + whole(p.data.value) + ' [' + whole(p.data.lo) + ', ' + whole(p.data.hi) + '], n = ' + p.data.n).join(''),
      },
      legend: { type: 'scroll', top: 0 },
      grid: { left: 70, right: 24, top: 36, bottom: 48 },
      xAxis: { type: 'category', data: d.categories, name: d.x, nameLocation: 'middle', nameGap: 30 },
      yAxis: { type: 'value', name: d.unit },
      series,
    };
  }

  // scatterfit: a figure at each step against the pod count, a dot per step coloured by its trial, the
  // line fitted to the dots over the pod counts measured, and the band between the lines of the slope's
  // interval ends, which cross on the line at the pivot (the Go side computes the line and the band).
  function scatterfit(d) {
    const trials = [...new Set(d.points.map((p) => p.trial))].sort((a, b) => a - b);
    const series = [];
    if (d.band) {
      series.push({ name: '95% interval of the slope', type: 'custom', z: 1, tooltip: { show: false }, encode: { x: 0, y: [1, 2] },
        itemStyle: { color: 'rgba(47, 111, 214, 0.35)' }, data: d.band,
        renderItem: (params, api) => {
          const i = params.dataIndex;
          if (i + 1 >= d.band.length) {
            return null;
          }
          const a = d.band[i];
          const b = d.band[i + 1];
          const points = [api.coord([a[0], a[1]]), api.coord([b[0], b[1]]), api.coord([b[0], b[2]]), api.coord([a[0], a[2]])];
          return { type: 'polygon', shape: { points }, style: { fill: 'rgba(47, 111, 214, 0.16)', stroke: 'rgba(47, 111, 214, 0.45)', lineWidth: 0.8 } };
        } });
    }
    if (d.line) {
      series.push({ name: 'fitted line', type: 'line', z: 3, symbol: 'none', tooltip: { show: false }, data: d.line,
        lineStyle: { color: '#1d2330', width: 1.6 }, itemStyle: { color: '#1d2330' } });
    }
    trials.forEach((t, k) => series.push({ name: 'trial ' + t, type: 'scatter', z: 5, symbolSize: 9,
      itemStyle: { color: palette[k % palette.length], opacity: 0.9 },
      data: d.points.filter((p) => p.trial === t).map((p) => [p.pods, p.value, p.trial]) }));
    return {
      animation: false,
      title: { text: d.name, subtext: d.caption, left: 8, top: 0, textStyle: { fontSize: 13 }, subtextStyle: { fontSize: 11, color: '#5b6575' } },
      tooltip: {
        trigger: 'item',
        formatter: (p) => esc(d.name) + '<br>' + p.value[0] + ' pods, trial ' + p.value[2] + ': ' + num(p.value[1]) + ' ' + esc(d.unit),
      },
      legend: { type: 'scroll', bottom: 0 },
      grid: { left: 70, right: 24, top: 58, bottom: 64 },
      xAxis: { type: 'value', name: 'pods', nameLocation: 'middle', nameGap: 26, minInterval: 1 },
      yAxis: { type: 'value', name: d.unit, scale: true, axisLabel: { formatter: num } },
      series,
    };
  }

  // hist: histograms side by side, a bar per bucket and series, the height its share of the series's
  // count (so that series of very different counts compare), the count in the tooltip.
  function hist(d) {
    return {
      color: palette, animation: false,
      tooltip: {
        trigger: 'axis', axisPointer: { type: 'shadow' },
        formatter: (ps) => esc(ps[0].axisValue) + ps.map((p) => '<br>' + p.marker + esc(p.seriesName) + ': ' +
          whole(d.series[p.seriesIndex].counts[p.dataIndex]) + ' (' + num(p.value) + '%)').join(''),
      },
      legend: { type: 'scroll', top: 0 },
      grid: { left: 8, right: 24, top: 36, bottom: 40, containLabel: true },
      xAxis: { type: 'category', data: d.buckets, name: d.x, nameLocation: 'middle', nameGap: 28, axisLabel: { interval: 0, rotate: d.buckets.length > 8 ? 30 : 0, fontSize: 10 } },
      yAxis: { type: 'value', name: 'share of its requests', nameTextStyle: { align: 'left' }, max: 100, axisLabel: { formatter: (v) => v + '%' } },
      series: d.series.map((s) => ({ name: s.name, type: 'bar', data: s.share, emphasis: { focus: 'series' } })),
    };
  }

  const kinds = { busy, flame, box, sweep, bars, stack, ratios, lines, scatterfit, hist };
  const drawn = [];
  for (const c of TARE.charts) {
    const el = document.getElementById(c.id);
    if (!el || !kinds[c.kind]) {
      throw new Error('tare report: no container or drawing for chart ' + c.id + ' (' + c.kind + ')');
    }
    const chart = echarts.init(el, null, { renderer: 'svg' });
    chart.on('finished', () => { el.dataset.rendered = 'true'; });
    chart.setOption(kinds[c.kind](c.data));
    drawn.push(chart);
  }
  window.addEventListener('resize', () => drawn.forEach((c) => c.resize()));
  document.body.dataset.charts = String(drawn.length);
})();
