package histogram

import "testing"

func TestQuantileInterpolatesWithinItsBucket(t *testing.T) {
	h := New([]float64{10, 20, 40})
	for _, v := range []float64{1, 2, 3, 4, 15, 15, 15, 15, 30, 100} {
		h.Observe(v)
	}
	for _, c := range []struct {
		q, want float64
	}{
		{0.2, 5},    // rank 2 of the 4 values in (0, 10]
		{0.5, 12.5}, // rank 5: the first of the 4 in (10, 20]
		{0.8, 20},   // rank 8: the last of them
		{0.9, 40},   // rank 9: the one value in (20, 40]
		{0.99, 40},  // the open bucket reports the last bound
	} {
		got, ok := h.Quantile(c.q)
		if !ok || got != c.want {
			t.Errorf("Quantile(%v) = %v, %v; want %v", c.q, got, ok, c.want)
		}
	}
	if _, ok := New([]float64{1}).Quantile(0.5); ok {
		t.Error("an empty histogram has a quantile")
	}
}

func TestAddSumsBuckets(t *testing.T) {
	a, b := New([]float64{1, 2}), New([]float64{1, 2})
	a.Observe(0.5)
	b.Observe(1.5)
	b.Observe(9)
	a.Add(b)
	if got := a.Counts; got[0] != 1 || got[1] != 1 || got[2] != 1 || a.Total() != 3 {
		t.Errorf("counts %v, total %d; want [1 1 1], 3", got, a.Total())
	}
}
