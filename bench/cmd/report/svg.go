package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

var familyColour = map[string]string{
	"zerodial": "#2b6cb0",
	"peer":     "#a0aec0",
	"floor":    "#38a169",
}

// WriteSVG draws the median ns/op of every implementation at size as
// horizontal bars on a logarithmic axis.
func WriteSVG(w io.Writer, s *Set, size string) error {
	type bar struct {
		label, family string
		v             float64
		ok            bool
	}
	var bars []bar
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, im := range impls {
		v, ok := s.Median(unaryName(im.name, size), "ns/op")
		ok = ok && v > 0
		bars = append(bars, bar{im.name, im.family, v, ok})
		if ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	// Whole decades, at least one.
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}

	const (
		width, left, right, top, rowH, barH = 820, 190, 90, 64, 24, 16
	)
	plotW := float64(width - left - right)
	height := top + rowH*len(bars) + 40
	x := func(v float64) float64 {
		return float64(left) + (math.Log10(v)-dlo)/(dhi-dlo)*plotW
	}

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%d" y="22" font-size="15" font-weight="bold">ns/op per call, %s (median, log scale; shorter is faster)</text>`+"\n", left, html.EscapeString(size))
	lx := left
	for _, f := range []string{"zerodial", "peer", "floor"} {
		p(`<rect x="%d" y="34" width="12" height="12" fill="%s"/><text x="%d" y="45">%s</text>`+"\n", lx, familyColour[f], lx+16, f)
		lx += 100
	}
	axisY := top + rowH*len(bars)
	for d := dlo; d <= dhi; d++ {
		gx := x(math.Pow(10, d))
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e2e8f0"/>`+"\n", gx, top-6, gx, axisY)
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#4a5568">%s</text>`+"\n", gx, axisY+16, durationLabel(math.Pow(10, d)))
	}
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, axisY, width-right, axisY)
	for i, br := range bars {
		y := top + rowH*i
		p(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-3, html.EscapeString(br.label))
		if !br.ok {
			p(`<text x="%d" y="%d" fill="#a0aec0">no data</text>`+"\n", left+4, y+barH-3)
			continue
		}
		x0 := float64(left)
		bw := math.Max(x(br.v)-x0, 1)
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s ns/op</title></rect>`+"\n",
			x0, y, bw, barH, familyColour[br.family], html.EscapeString(br.label), fmtNum(br.v))
		p(`<text x="%.1f" y="%d">%s</text>`+"\n", x0+bw+4, y+barH-3, durationLabel(br.v))
	}
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// durationLabel prints nanoseconds with a unit: "850 ns", "12.3 µs", "1 ms".
func durationLabel(ns float64) string {
	unit, div := "ns", 1.0
	switch {
	case ns >= 1e9:
		unit, div = "s", 1e9
	case ns >= 1e6:
		unit, div = "ms", 1e6
	case ns >= 1e3:
		unit, div = "µs", 1e3
	}
	v := ns / div
	switch {
	case v >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// lineColours tell the lines of the concurrency chart apart: blues for
// zerodial, warm colours for the peers.
var lineColours = map[string]string{
	"zerodial-copy":    "#1a365d",
	"zerodial-memory":  "#2b6cb0",
	"zerodial-tcp":     "#4299e1",
	"zerodial-mux":     "#00a3c4",
	"netrpc-yamux":     "#c05621",
	"msgpackrpc-yamux": "#d69e2e",
	"grpc-tcp":         "#9b2c2c",
}

// WriteConcurrencySVG draws the median calls/s of every row of
// BenchmarkConcurrency against the number of callers, one line per row, both
// axes logarithmic.
func WriteConcurrencySVG(w io.Writer, s *Set) error {
	type point struct {
		callers int
		v       float64
	}
	lines := make([][]point, len(concurrencyImpls))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, im := range concurrencyImpls {
		for _, n := range concurrencyCallers {
			if v, ok := s.Median(concurrencyName(im.name, n), "calls/s"); ok && v > 0 {
				lines[i] = append(lines[i], point{n, v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e3, 1e4
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	const (
		width, height, left, right, top, bottom = 820, 460, 80, 170, 50, 50
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	xlo, xhi := math.Log10(float64(concurrencyCallers[0])), math.Log10(float64(concurrencyCallers[len(concurrencyCallers)-1]))
	x := func(n int) float64 { return float64(left) + (math.Log10(float64(n))-xlo)/(xhi-xlo)*plotW }
	y := func(v float64) float64 { return float64(top) + plotH - (math.Log10(v)-dlo)/(dhi-dlo)*plotH }

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%d" y="24" font-size="15" font-weight="bold">16B calls/s against callers sharing one client (median, log scales; higher is faster)</text>`+"\n", left)
	axisY := top + int(plotH)
	// Horizontal grid: decades, and 2× and 5× within them.
	for d := dlo; d <= dhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if d == dhi && m > 1 {
				break
			}
			gy := y(v)
			stroke := "#edf2f7"
			if m == 1 {
				stroke = "#cbd5e0"
			}
			p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, gy, width-right, gy, stroke)
			p(`<text x="%d" y="%.1f" text-anchor="end" fill="#4a5568">%s</text>`+"\n", left-6, gy+4, rateLabel(v))
		}
	}
	for _, n := range concurrencyCallers {
		gx := x(n)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#edf2f7"/>`+"\n", gx, top, gx, axisY)
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#4a5568">%d</text>`+"\n", gx, axisY+16, n)
	}
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, axisY, width-right, axisY)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, top, left, axisY)
	p(`<text x="%.1f" y="%d" text-anchor="middle">concurrent callers</text>`+"\n", float64(left)+plotW/2, axisY+36)
	for i, im := range concurrencyImpls {
		colour := lineColours[im.name]
		dash := ""
		if im.family != "zerodial" {
			dash = ` stroke-dasharray="6 3"`
		}
		ly := top + 10 + 20*i
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", width-right+12, ly, width-right+36, ly, colour, dash)
		label := im.name
		if len(lines[i]) == 0 {
			label += " (no data)"
		}
		p(`<text x="%d" y="%d">%s</text>`+"\n", width-right+42, ly+4, html.EscapeString(label))
		if len(lines[i]) == 0 {
			continue
		}
		var pts []string
		for _, pt := range lines[i] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.callers), y(pt.v)))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
		for _, pt := range lines[i] {
			p(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %d callers: %s calls/s</title></circle>`+"\n",
				x(pt.callers), y(pt.v), colour, html.EscapeString(im.name), pt.callers, fmtNum(pt.v))
		}
	}
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// rateLabel prints calls per second compactly: "500", "20k", "1.5M".
func rateLabel(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return fmt.Sprintf("%.0f", v)
}
