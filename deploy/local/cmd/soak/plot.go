package main

import (
	"fmt"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotWindow is the stretch of time each latency point of the plot sums up.
const plotWindow = 10 * time.Second

// writePlots draws latency (p50, p99 per plotWindow), RSS and goroutines per program over the
// run into dir and returns the files' paths.
func writePlots(dir string, recs []record, samples map[string][]point, programs []string, d, warmup time.Duration) ([]string, error) {
	var p50, p99 plotter.XYs
	for from := time.Duration(0); from < d; from += plotWindow {
		w := aggregate(recs, from, from+plotWindow)
		if w.requests == 0 {
			continue
		}
		x := (from + plotWindow/2).Minutes()
		p50 = append(p50, plotter.XY{X: x, Y: ms(w.p50)})
		p99 = append(p99, plotter.XY{X: x, Y: ms(w.p99)})
	}
	latency := []series{{"p50", p50}, {"p99", p99}}
	var rss, gor []series
	for _, name := range programs {
		var r, g plotter.XYs
		for _, p := range samples[name] {
			x := p.at.Minutes()
			if x < 0 || p.at > d {
				continue
			}
			r = append(r, plotter.XY{X: x, Y: float64(p.rss) / (1 << 20)})
			if p.goroutines >= 0 {
				g = append(g, plotter.XY{X: x, Y: float64(p.goroutines)})
			}
		}
		rss = append(rss, series{name, r})
		if len(g) > 0 {
			gor = append(gor, series{name, g})
		}
	}
	var paths []string
	for _, f := range []struct {
		file, title, y string
		lines          []series
	}{
		{"latency.png", fmt.Sprintf("Latency through the gateway, per %s (warm-up until %s)", plotWindow, warmup), "ms", latency},
		{"rss.png", "Resident memory (VmRSS) per program", "MiB", rss},
		{"goroutines.png", "Goroutines per program (go_goroutines)", "goroutines", gor},
	} {
		path := filepath.Join(dir, f.file)
		if err := drawLines(path, f.title, f.y, f.lines, warmup); err != nil {
			return paths, fmt.Errorf("plot %s: %w", f.file, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

type series struct {
	name string
	xys  plotter.XYs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func drawLines(path, title, yLabel string, lines []series, warmup time.Duration) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "minutes since the soak's start"
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	maxY := 0.0
	for i, s := range lines {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		p.Add(l)
		p.Legend.Add(s.name, l)
		for _, xy := range s.xys {
			maxY = max(maxY, xy.Y)
		}
	}
	// Headroom above the highest line, where the legend sits.
	p.Y.Max = maxY * 1.35
	if warmup > 0 {
		// The warm-up's end, as a vertical line.
		w, err := plotter.NewLine(plotter.XYs{{X: warmup.Minutes(), Y: 0}, {X: warmup.Minutes(), Y: p.Y.Max}})
		if err != nil {
			return err
		}
		w.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(w)
		p.Legend.Add("end of warm-up", w)
	}
	return p.Save(24*vg.Centimeter, 14*vg.Centimeter, path)
}
