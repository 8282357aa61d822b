package web_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// themes reads the stylesheet's colour variables: the light theme of
// :root, and the dark one, which overrides some of them.
func themes(t *testing.T) map[string]map[string]string {
	t.Helper()
	css, err := os.ReadFile("static/ctalk.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := regexp.MustCompile(`--([a-z-]+):\s*#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b`)
	light, dark := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(css), "\n") {
		into := light
		switch {
		case strings.HasPrefix(line, ":root {"):
		case strings.HasPrefix(line, "@media (prefers-color-scheme: dark) { :root {"):
			into = dark
		default:
			continue
		}
		for _, m := range vars.FindAllStringSubmatch(line, -1) {
			hex := m[2]
			if len(hex) == 3 {
				hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
			}
			into[m[1]] = "#" + hex
		}
	}
	if len(dark) == 0 {
		t.Fatal("the stylesheet has no dark theme")
	}
	for k, v := range light {
		if _, ok := dark[k]; !ok {
			dark[k] = v
		}
	}
	return map[string]map[string]string{"light": light, "dark": dark}
}

// luminance is a colour's relative luminance (WCAG 2.2).
func luminance(hex string) float64 {
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		n, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(n) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}

func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// TestThemeColoursContrast holds both themes' colours to WCAG 2.2 AA,
// including what axe cannot see on a page (a field's outline, the focus
// ring): text and the text of filled controls at least 4.5:1, the outline
// of a field and the focus ring at least 3:1 on every background.
func TestThemeColoursContrast(t *testing.T) {
	t.Parallel()
	for name, th := range themes(t) {
		for _, pair := range []struct {
			fg, bg string
			min    float64
		}{
			{"fg", "bg", 4.5}, {"fg", "card", 4.5},
			{"muted", "bg", 4.5}, {"muted", "card", 4.5},
			{"accent", "bg", 4.5}, {"accent", "card", 4.5},
			{"err", "bg", 4.5}, {"err", "card", 4.5},
			{"on-fill", "fill", 4.5}, {"on-fill", "fill-danger", 4.5},
			{"edge", "bg", 3}, {"edge", "card", 3},
		} {
			fg, bg := th[pair.fg], th[pair.bg]
			if fg == "" || bg == "" {
				t.Errorf("%s theme: no --%s or --%s", name, pair.fg, pair.bg)
				continue
			}
			if c := contrast(fg, bg); c < pair.min {
				t.Errorf("%s theme: --%s %s on --%s %s is %.2f:1, want at least %.1f:1", name, pair.fg, fg, pair.bg, bg, c, pair.min)
			}
		}
	}
}
