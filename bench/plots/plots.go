// Package plots draws the bench's pictures with gonum.org/v1/plot, each as
// PNG and SVG: achieved against offered throughput (log-log, thresholds
// marked), the density of cache events per worker over time, and latency
// CDFs.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/flashindexer/flashindexer/bench/sim"
)

// Series is one backend's sweep.
type Series struct {
	Name              string
	Offered, Achieved []float64 // block-ops/s
	Threshold         float64
}

func save(p *plot.Plot, dir, name string, w, h vg.Length) ([]string, error) {
	var files []string
	for _, ext := range []string{".png", ".svg"} {
		f := filepath.Join(dir, name+ext)
		if err := p.Save(w, h, f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// Throughput plots achieved against offered block-ops/s for every series,
// log-log, with y = x and each threshold marked.
func Throughput(dir, name, title string, series []Series) ([]string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered block-ops/s"
	p.Y.Label.Text = "achieved block-ops/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	lo, hi := math.Inf(1), 0.0
	for i, s := range series {
		pts := make(plotter.XYs, 0, len(s.Offered))
		for j := range s.Offered {
			if s.Offered[j] > 0 && s.Achieved[j] > 0 {
				pts = append(pts, plotter.XY{X: s.Offered[j], Y: s.Achieved[j]})
				lo, hi = min(lo, s.Offered[j], s.Achieved[j]), max(hi, s.Offered[j], s.Achieved[j])
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(fmt.Sprintf("%s (threshold %s)", s.Name, SI(s.Threshold)), l, sc)
		if s.Threshold > 0 {
			m, err := plotter.NewScatter(plotter.XYs{{X: s.Threshold, Y: s.Threshold}})
			if err != nil {
				return nil, err
			}
			m.Color, m.Radius = plotutil.Color(i), vg.Points(6)
			p.Add(m)
		}
	}
	if hi > 0 {
		diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
		if err != nil {
			return nil, err
		}
		diag.Color = color.Gray{Y: 160}
		diag.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(diag)
		p.Legend.Add("achieved = offered", diag)
	}
	p.Add(plotter.NewGrid())
	return save(p, dir, name, 8*vg.Inch, 6*vg.Inch)
}

// density is the heat map grid: per worker and time bucket, the share of
// stored minus removed blocks, from -1 (only removes) to +1 (only stores);
// NaN (drawn white) where the worker had no event.
type density struct {
	cols, rows int
	z          []float64
	bucket     float64 // seconds
}

func (d *density) Dims() (int, int)   { return d.cols, d.rows }
func (d *density) Z(c, r int) float64 { return d.z[r*d.cols+c] }
func (d *density) X(c int) float64    { return (float64(c) + 0.5) * d.bucket }
func (d *density) Y(r int) float64    { return float64(r) }

// EventDensity draws stored- against removed-dominated intervals per worker
// over the trace's time.
func EventDensity(dir, name, title string, wl *sim.Workload, buckets int) ([]string, error) {
	if wl.Span <= 0 || len(wl.Workers) == 0 {
		return nil, fmt.Errorf("empty workload")
	}
	buckets = max(1, buckets)
	rows := len(wl.Workers)
	stored := make([]float64, rows*buckets)
	removed := make([]float64, rows*buckets)
	t0 := wl.Ops[0].T
	for _, op := range wl.Ops {
		if op.Event == nil {
			continue
		}
		c := min(buckets-1, int(float64(op.T-t0)/float64(wl.Span)*float64(buckets)))
		r := int(op.Event.Worker.ID) % rows
		stored[r*buckets+c] += float64(len(op.Event.Blocks))
		removed[r*buckets+c] += float64(len(op.Event.Hashes))
	}
	d := &density{cols: buckets, rows: rows, z: make([]float64, rows*buckets), bucket: float64(wl.Span) / 1e9 / float64(buckets)}
	for i := range d.z {
		d.z[i] = math.NaN()
		if n := stored[i] + removed[i]; n > 0 {
			d.z[i] = (stored[i] - removed[i]) / n
		}
	}
	cm := moreland.SmoothGreenRed()
	cm.SetMin(-1)
	cm.SetMax(1)
	h := plotter.NewHeatMap(d, reversed{cm.Palette(64)})
	h.Min, h.Max = -1, 1
	h.NaN = color.White
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "trace time (s)"
	p.Y.Label.Text = "worker"
	p.Add(h)
	return save(p, dir, name, 10*vg.Inch, vg.Length(2+0.25*float64(min(rows, 64)))*vg.Inch)
}

// reversed puts green (stores) at the top of the range, red (removes) at
// the bottom.
type reversed struct {
	p interface{ Colors() []color.Color }
}

func (r reversed) Colors() []color.Color {
	c := r.p.Colors()
	out := make([]color.Color, len(c))
	for i := range c {
		out[i] = c[len(c)-1-i]
	}
	return out
}

// LatencyCDF plots the cumulative distribution of query latencies.
func LatencyCDF(dir, name, title string, names []string, lat [][]time.Duration) ([]string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "FindMatches latency (µs)"
	p.Y.Label.Text = "fraction of queries"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	drawn := 0
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		n := min(len(l), 2000)
		pts := make(plotter.XYs, n)
		for j := range pts {
			k := j * (len(l) - 1) / max(1, n-1)
			pts[j] = plotter.XY{X: max(0.01, float64(l[k].Nanoseconds())/1e3), Y: float64(k+1) / float64(len(l))}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(names[i], line)
		drawn++
	}
	if drawn == 0 { // no backend sustained a load: an empty chart on a log axis
		p.X.Min, p.X.Max = 1, 1000
	}
	p.Add(plotter.NewGrid())
	return save(p, dir, name, 8*vg.Inch, 6*vg.Inch)
}

// SI formats a rate with an SI suffix.
func SI(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Bar is one bar of Bars: its group, its name within the group, its value.
type Bar struct {
	Group, Name string
	Value       float64
}

// Bars draws horizontal bars, one per entry in order, each labelled with
// its group and name.
func Bars(dir, name, title string, bars []Bar) ([]string, error) {
	p := plot.New()
	p.Title.Text = title
	vals := make(plotter.Values, len(bars))
	labels := make([]string, len(bars))
	for i, b := range bars {
		j := len(bars) - 1 - i // the first bar on top
		vals[j], labels[j] = b.Value, b.Group+": "+b.Name
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(9))
	if err != nil {
		return nil, err
	}
	bc.Horizontal = true
	bc.LineStyle.Width = 0
	bc.Color = plotutil.Color(0)
	p.Add(bc)
	p.NominalY(labels...)
	p.X.Min, p.X.Max = 0, 1.05*slices.Max(vals)
	return save(p, dir, name, 8*vg.Inch, vg.Length(len(bars))*vg.Points(13)+vg.Inch)
}

// Line is one series of a plot against the number of workers.
type Line struct {
	Name string
	Y    []float64
}

// Widths plots each line against the workers (log scale); logY puts the
// values on a log scale too.
func Widths(dir, name, title, ylabel string, workers []int, lines []Line, logY bool) ([]string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = widthTicks(workers)
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top, p.Legend.Left = true, true
	for i, l := range lines {
		pts := make(plotter.XYs, 0, len(workers))
		for j, w := range workers {
			if j < len(l.Y) && (!logY || l.Y[j] > 0) {
				pts = append(pts, plotter.XY{X: float64(w), Y: l.Y[j]})
			}
		}
		ln, dots, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		ln.Color, dots.Color = plotutil.Color(i), plotutil.Color(i)
		ln.Dashes = plotutil.Dashes(i)
		dots.Shape = plotutil.Shape(i)
		p.Add(ln, dots)
		p.Legend.Add(l.Name, ln, dots)
	}
	if !logY {
		p.Y.Min = 0
	}
	return save(p, dir, name, 6*vg.Inch, 4*vg.Inch)
}

// widthTicks marks each measured number of workers.
type widthTicks []int

func (t widthTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, w := range t {
		if f := float64(w); f >= lo && f <= hi {
			ts = append(ts, plot.Tick{Value: f, Label: fmt.Sprint(w)})
		}
	}
	return ts
}
