package readcache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// item is a cached value of a user of an org.
type item struct {
	org, user string
	n         int
}

func itemScope(v item) Scope { return Scope{OrgID: v.org, UserID: v.user} }

func newTestCache(ttl time.Duration, max int) *Cache[string, item] {
	// No database: these tests forget directly, as Changed and Listen do.
	return New[string, item](nil, "test", ttl, max, itemScope)
}

// TestFreshness: an entry is served while it is fresh by both clocks and
// valid by its own terms, and not after.
func TestFreshness(t *testing.T) {
	c := newTestCache(time.Minute, 10)
	now := time.Now()
	c.Put("k", item{"acme", "bob", 1}, c.Begin(now), time.Time{})
	if v, ok := c.Get("k", now); !ok || v.n != 1 {
		t.Fatalf("Get at once = %v, %v; want the value", v, ok)
	}
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"a minute later by the database's clock", now.Add(time.Minute)},
		{"before it was read by the database's clock (the clock went back)", now.Add(-time.Second)},
	} {
		if _, ok := c.Get("k", tc.at); ok {
			t.Errorf("Get %s: served", tc.name)
		}
	}
	if _, ok := c.Get("missing", now); ok {
		t.Error("Get of a key never put: served")
	}

	c.Put("expiring", item{"acme", "bob", 2}, c.Begin(now), now.Add(time.Second))
	if _, ok := c.Get("expiring", now.Add(time.Second-time.Millisecond)); !ok {
		t.Error("a value before its own end: not served")
	}
	if _, ok := c.Get("expiring", now.Add(time.Second)); ok {
		t.Error("a value at its own end: served")
	}

	// By the monotonic clock alone: the database's clock standing still
	// does not keep an entry past the TTL.
	short := newTestCache(20*time.Millisecond, 10)
	short.Put("k", item{"acme", "bob", 1}, short.Begin(now), time.Time{})
	time.Sleep(25 * time.Millisecond)
	if _, ok := short.Get("k", now); ok {
		t.Error("an entry older than the TTL by the monotonic clock: served")
	}
}

// TestGenerations: an entry put just before the generations rotate is
// still served from the older one; the one before that is gone.
func TestGenerations(t *testing.T) {
	c := newTestCache(30*time.Millisecond, 10)
	c.Put("old", item{"acme", "bob", 1}, c.Begin(time.Now()), time.Time{})
	time.Sleep(35 * time.Millisecond)
	now := time.Now()
	c.Put("new", item{"acme", "bob", 2}, c.Begin(now), time.Time{})
	if len(c.prev.entries) != 1 || len(c.cur.entries) != 1 {
		t.Fatalf("after a TTL: %d entries in the older generation, %d in the newer; want 1 and 1", len(c.prev.entries), len(c.cur.entries))
	}
	if _, ok := c.Get("new", now); !ok {
		t.Error("the new entry is not served")
	}
	time.Sleep(35 * time.Millisecond)
	c.Put("newer", item{"acme", "bob", 3}, c.Begin(time.Now()), time.Time{})
	if _, kept := c.prev.entries["old"]; kept || len(c.prev.entries) != 1 {
		t.Fatalf("after two TTLs the older generation holds %v; want only the entry of the last", c.prev.entries)
	}
}

// TestMax: beyond max entries, values are not kept.
func TestMax(t *testing.T) {
	c := newTestCache(time.Minute, 3)
	now := time.Now()
	for i := range 5 {
		c.Put(fmt.Sprint(i), item{"acme", "bob", i}, c.Begin(now), time.Time{})
	}
	for i := range 5 {
		if _, ok := c.Get(fmt.Sprint(i), now); ok != (i < 3) {
			t.Errorf("entry %d served: %v", i, ok)
		}
	}
}

// TestForgetScopes: a change of a user forgets that user's entries, of an
// org (user empty) all of the org's; other users and orgs keep theirs;
// forgetAll forgets everything.
func TestForgetScopes(t *testing.T) {
	c := newTestCache(time.Minute, 10)
	now := time.Now()
	fill := func() {
		for _, v := range []item{{"acme", "bob", 1}, {"acme", "carol", 2}, {"globex", "bob", 3}} {
			c.Put(v.org+"/"+v.user, v, c.Begin(now), time.Time{})
		}
	}
	served := func() (keys []string) {
		for _, k := range []string{"acme/bob", "acme/carol", "globex/bob"} {
			if _, ok := c.Get(k, now); ok {
				keys = append(keys, k)
			}
		}
		return keys
	}
	fill()
	c.forget(Scope{OrgID: "acme", UserID: "bob"})
	if got := fmt.Sprint(served()); got != "[acme/carol globex/bob]" {
		t.Errorf("after a change of acme/bob: %s served", got)
	}
	fill()
	c.forget(Scope{OrgID: "acme"})
	if got := fmt.Sprint(served()); got != "[globex/bob]" {
		t.Errorf("after a change of acme: %s served", got)
	}
	fill()
	c.forgetAll()
	if got := served(); len(got) != 0 {
		t.Errorf("after forgetting all: %s served", got)
	}
}

// TestForgetAfterPutAgain: a key put again with a value of another scope
// is forgotten by a change of its new scope, and not by one of its old.
func TestForgetAfterPutAgain(t *testing.T) {
	c := newTestCache(time.Minute, 10)
	now := time.Now()
	c.Put("k", item{"acme", "bob", 1}, c.Begin(now), time.Time{})
	c.Put("k", item{"globex", "carol", 2}, c.Begin(now), time.Time{})
	c.forget(Scope{OrgID: "acme", UserID: "bob"})
	c.forget(Scope{OrgID: "acme"})
	if v, ok := c.Get("k", now); !ok || v.n != 2 {
		t.Fatalf("after changes of its old scope: %v, %v; want the new value", v, ok)
	}
	c.forget(Scope{OrgID: "globex", UserID: "carol"})
	if _, ok := c.Get("k", now); ok {
		t.Fatal("after a change of its new scope: served")
	}
	c.Put("k", item{"globex", "carol", 3}, c.Begin(now), time.Time{})
	c.forget(Scope{OrgID: "globex"})
	if _, ok := c.Get("k", now); ok {
		t.Fatal("after a change of its new org: served")
	}
}

// TestReadBeforeChangeNotKept: a read begun before a change was forgotten
// may hold what the change replaced, so it is not kept, whatever scope the
// change had.
func TestReadBeforeChangeNotKept(t *testing.T) {
	c := newTestCache(time.Minute, 10)
	now := time.Now()
	r := c.Begin(now)
	c.forget(Scope{OrgID: "globex", UserID: "someone"})
	c.Put("k", item{"acme", "bob", 1}, r, time.Time{})
	if _, ok := c.Get("k", now); ok {
		t.Fatal("a value read across a change was kept")
	}
	c.Put("k", item{"acme", "bob", 2}, c.Begin(now), time.Time{})
	if v, ok := c.Get("k", now); !ok || v.n != 2 {
		t.Fatalf("a read begun after the change: %v, %v; want it kept", v, ok)
	}
}

// TestConcurrentReadsAndChanges: readers read a version and cache it while
// a writer changes it and forgets; once a change is forgotten, no reader,
// however its read interleaved with the change, leaves an older version
// served.
func TestConcurrentReadsAndChanges(t *testing.T) {
	c := newTestCache(time.Minute, 10)
	var version atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				now := time.Now()
				if _, ok := c.Get("k", now); ok {
					continue
				}
				r := c.Begin(now)
				v := version.Load() // the read of the database
				c.Put("k", item{"acme", "bob", int(v)}, r, time.Time{})
			}
		})
	}
	for n := 1; n <= 2000; n++ {
		version.Store(int64(n)) // the change commits
		c.forget(Scope{OrgID: "acme", UserID: "bob"})
		if v, ok := c.Get("k", time.Now()); ok && v.n < n {
			close(stop)
			wg.Wait()
			t.Fatalf("after change %d the cache serves version %d", n, v.n)
		}
	}
	close(stop)
	wg.Wait()
}

// BenchmarkForget forgets one user's entries, and puts them back, in a
// cache of 10,000 users' entries, in 1,000 orgs or in one, as every
// wake-up heard from another replica does.
func BenchmarkForget(b *testing.B) {
	for _, orgs := range []int{1000, 1} {
		b.Run(fmt.Sprint("orgs=", orgs), func(b *testing.B) {
			c := newTestCache(time.Hour, 20000)
			now := time.Now()
			for i := range 10000 {
				v := item{fmt.Sprint("org", i%orgs), fmt.Sprint("user", i), i}
				c.Put(v.org+"/"+v.user, v, c.Begin(now), time.Time{})
			}
			v := item{fmt.Sprint("org", 7%orgs), "user7", 7}
			b.ReportAllocs()
			for b.Loop() {
				c.forget(Scope{OrgID: v.org, UserID: v.user})
				c.Put(v.org+"/"+v.user, v, c.Begin(now), time.Time{})
			}
		})
	}
}
