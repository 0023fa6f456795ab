// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var httpClient = &http.Client{Timeout: 2 * time.Minute}

func getBody(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b, nil
}

// Heap is a process's live heap after a forced GC (runtime.MemStats, as the heap profile of its
// --pprof-bind-address reports them), and the Go runtime's in-use heap as its Prometheus endpoint
// reports it (no GC forced: for comparison).
type Heap struct {
	Alloc          uint64  `json:"heap_alloc"`
	Inuse          uint64  `json:"heap_inuse"`
	Objects        uint64  `json:"heap_objects"`
	Sys            uint64  `json:"sys"`
	MetricsInuse   float64 `json:"metrics_heap_inuse"`
	LivePayments   int64   `json:"live_payments"`
	MeasuredAtUnix int64   `json:"at"`
}

func (st *stack) heap(ctx context.Context, process string) (Heap, error) {
	// gc=1 collects before the profile is taken; debug=1 appends runtime.MemStats as comments.
	b, err := getBody(ctx, "http://"+st.debug[process]+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return Heap{}, err
	}
	h, err := parseHeapProfile(b)
	if err != nil {
		return Heap{}, fmt.Errorf("heap profile of %s: %w", process, err)
	}
	if m, err := st.metric(ctx, process, "go_memstats_heap_inuse_bytes"); err == nil {
		h.MetricsInuse = m
	}
	h.MeasuredAtUnix = time.Now().Unix()
	return h, nil
}

// parseHeapProfile reads the runtime.MemStats lines ("# HeapAlloc = 123") of a text heap profile.
func parseHeapProfile(text []byte) (Heap, error) {
	var h Heap
	fields := map[string]*uint64{"HeapAlloc": &h.Alloc, "HeapInuse": &h.Inuse, "HeapObjects": &h.Objects, "Sys": &h.Sys}
	found := 0
	for line := range bytes.Lines(text) {
		name, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(line)), "# "), " = ")
		if dst := fields[name]; ok && dst != nil {
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return Heap{}, fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
			found++
		}
	}
	if found != len(fields) {
		return Heap{}, errors.New("no runtime.MemStats in the profile (not a debug=1 heap profile)")
	}
	return h, nil
}

// metric is the sum of a metric's samples on a process's /metrics.
func (st *stack) metric(ctx context.Context, process, name string) (float64, error) {
	b, err := getBody(ctx, "http://"+st.metrics[process]+"/metrics")
	if err != nil {
		return 0, err
	}
	return promSum(b, name)
}

// promSum adds the samples of metric name in Prometheus text exposition
// (name{labels} value [timestamp]).
func promSum(text []byte, name string) (float64, error) {
	var sum float64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		switch {
		case strings.HasPrefix(rest, "{"):
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				return 0, fmt.Errorf("malformed sample %q", line)
			}
			rest = rest[i+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric whose name starts with this one
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, fmt.Errorf("malformed sample %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		sum += v
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no metric %s", name)
	}
	return sum, nil
}

// quiesce waits until the manager's work queues are empty (controller-runtime's workqueue_depth:
// items waiting, not those scheduled for later), so a row does not start under the previous
// row's tail. It gives up after within.
func (st *stack) quiesce(ctx context.Context, within time.Duration) (time.Duration, float64) {
	start := time.Now()
	quiet := 0
	var depth float64
	for time.Since(start) < within && ctx.Err() == nil {
		d, err := st.metric(ctx, "manager", "workqueue_depth")
		depth = d
		if err == nil && d == 0 {
			quiet++
			if quiet >= 3 {
				break
			}
		} else {
			quiet = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(start), depth
}

// livePayments counts the Payments in etcd: a list of one item reports how many remain.
func (st *stack) livePayments(ctx context.Context, namespace string) (int64, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(paygatev1.GroupVersion.WithKind("PaymentList"))
	opts := []client.ListOption{client.Limit(1)}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := st.k8s.List(ctx, l, opts...); err != nil {
		return 0, err
	}
	n := int64(len(l.Items))
	if r := l.GetRemainingItemCount(); r != nil {
		n += *r
	}
	return n, nil
}

// ---- etcd ----

// etcdRange is what etcd holds under a key prefix: the keys, the bytes of their values, and the
// store's revision (one per write transaction), through etcd's JSON gateway (/v3/kv/range).
func (st *stack) etcdRange(ctx context.Context, prefix string) (keys int64, valueBytes int64, revision int64, err error) {
	end := []byte(prefix)
	end[len(end)-1]++
	body, _ := json.Marshal(map[string]string{
		"key": base64.StdEncoding.EncodeToString([]byte(prefix)), "range_end": base64.StdEncoding.EncodeToString(end)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.etcdURL+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		return 0, 0, 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
		Count string `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, 0, 0, fmt.Errorf("etcd range %s: %w", prefix, err)
	}
	for _, kv := range out.KVs {
		valueBytes += int64(base64.StdEncoding.DecodedLen(len(kv.Value)) - strings.Count(kv.Value, "="))
	}
	keys, _ = strconv.ParseInt(out.Count, 10, 64)
	revision, _ = strconv.ParseInt(out.Header.Revision, 10, 64)
	return keys, valueBytes, revision, nil
}

// etcdDBInUse is etcd's logical database size (etcd_mvcc_db_total_size_in_use_in_bytes): every
// revision not compacted yet, so it grows with each write, not only with what is stored.
func (st *stack) etcdDBInUse(ctx context.Context) (float64, error) {
	b, err := getBody(ctx, st.etcdURL+"/metrics")
	if err != nil {
		return 0, err
	}
	return promSum(b, "etcd_mvcc_db_total_size_in_use_in_bytes")
}

// ---- events ----

// EventCheck counts how often each transition was announced: Kubernetes Events per object and
// reason (a repeated Event of the events.k8s.io recorder is one object with a series count), and
// WebhookDeliveries per source object and event type.
type EventCheck struct {
	// ByReason counts every Event of the namespace by regarding kind and reason (series counted).
	ByReason             map[string]int `json:"by_reason"`
	Events               int            `json:"events"`
	EventsTwice          int            `json:"events_twice"` // (object, reason) pairs emitted more than once
	EventTwiceExamples   []string       `json:"event_twice_examples,omitempty"`
	Deliveries           int            `json:"deliveries"`
	DeliveriesTwice      int            `json:"deliveries_twice"` // (source, event type) pairs with more than one delivery
	DeliveryTwiceExample []string       `json:"delivery_twice_examples,omitempty"`
}

// Reasons a payment announces once per attempt or once per payment; a payment of the run makes
// one attempt, so each is expected once per object.
var onceReasons = map[string]bool{"PushStarted": true, "PaymentSucceeded": true, "PaymentFailed": true, "PaymentExpired": true}

func (st *stack) checkEvents(ctx context.Context, namespace string) (EventCheck, error) {
	var out EventCheck
	var el eventsv1.EventList
	if err := st.k8s.List(ctx, &el, client.InNamespace(namespace)); err != nil {
		return out, err
	}
	count, detail := map[string]int{}, map[string][]string{}
	out.ByReason = map[string]int{}
	for _, e := range el.Items {
		n, how := 1, "object"
		if e.Series != nil && e.Series.Count > 1 {
			n, how = int(e.Series.Count), "series"
		} else if e.DeprecatedCount > 1 {
			n, how = int(e.DeprecatedCount), "count"
		}
		out.ByReason[e.Regarding.Kind+"/"+e.Reason] += n
		if e.Regarding.Kind != "Payment" || !onceReasons[e.Reason] {
			continue
		}
		out.Events += n
		k := e.Regarding.Name + " " + e.Reason
		count[k] += n
		detail[k] = append(detail[k], fmt.Sprintf("%s %s×%d at %s", e.Name, how, n, e.EventTime.Format("15:04:05.000")))
	}
	for k, n := range count {
		if n > 1 {
			out.EventsTwice++
			if len(out.EventTwiceExamples) < 5 {
				out.EventTwiceExamples = append(out.EventTwiceExamples, fmt.Sprintf("%s ×%d: %s", k, n, strings.Join(detail[k], "; ")))
			}
		}
	}
	var dl paygatev1.WebhookDeliveryList
	if err := st.k8s.List(ctx, &dl, client.InNamespace(namespace)); err != nil {
		return out, err
	}
	byEvent := map[string]int{}
	for _, d := range dl.Items {
		out.Deliveries++
		byEvent[d.Spec.Source.UID+" "+d.Spec.Source.Name+" "+d.Spec.EventType]++
	}
	for k, n := range byEvent {
		if n > 1 {
			out.DeliveriesTwice++
			if len(out.DeliveryTwiceExample) < 5 {
				out.DeliveryTwiceExample = append(out.DeliveryTwiceExample, fmt.Sprintf("%s ×%d", k, n))
			}
		}
	}
	return out, nil
}

// kubeRequests counts kube-apiserver's requests so far (apiserver_request_total of every verb but
// WATCH), by "resource[/subresource] VERB code".
func (st *stack) kubeRequests(ctx context.Context) (map[string]float64, error) {
	b, err := st.kubeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return requestCounts(b), nil
}

// kubeMetrics is kube-apiserver's /metrics.
func (st *stack) kubeMetrics(ctx context.Context) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(st.restCfg)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
}

// terminatedWatchers reads apiserver_terminated_watchers_total by resource.
func (st *stack) terminatedWatchers(ctx context.Context) (map[string]float64, error) {
	b, err := st.kubeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_terminated_watchers_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `resource="`)
		res, _, _ := strings.Cut(rest, `"`)
		if f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:]); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			out[res] += v
		}
	}
	return out, nil
}

// requestCounts reads apiserver_request_total samples of every verb but WATCH (a watch is one
// long request, whatever it carries).
func requestCounts(text []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(line[len("apiserver_request_total{"):end], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		switch labels["verb"] {
		case "WATCH", "":
			continue
		}
		f := strings.Fields(line[end+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		out[res+" "+labels["verb"]+" "+labels["code"]] += v
	}
	return out
}

// ---- profiles ----

// cpuProfile fetches a CPU profile of seconds from a process's --pprof-bind-address into path.
func (st *stack) cpuProfile(ctx context.Context, process string, seconds int, path string) error {
	b, err := getBody(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", st.debug[process], seconds))
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// kubeAPIServerProfile fetches a CPU profile of kube-apiserver (its /debug/pprof, on by default).
func (st *stack) kubeAPIServerProfile(ctx context.Context, seconds int, path string) error {
	cs, err := kubernetes.NewForConfig(st.restCfg)
	if err != nil {
		return err
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).
		Timeout(time.Duration(seconds+60) * time.Second).DoRaw(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// heapProfile fetches a heap profile (after a GC) from a process's --pprof-bind-address into path.
func (st *stack) heapProfile(ctx context.Context, process, path string) error {
	b, err := getBody(ctx, "http://"+st.debug[process]+"/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
