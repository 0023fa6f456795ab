// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InformerIndexer adds the index name (fn) to obj's informer when r is an informer cache, once,
// and returns the informer's store to look objects up by it; nil when r is not an informer cache
// (a plain client in unit tests) or the index cannot be added, and the caller lists instead.
func InformerIndexer(r client.Reader, obj client.Object, name string, fn toolscache.IndexFunc) toolscache.Indexer {
	informers, ok := r.(crcache.Informers)
	if !ok {
		return nil
	}
	inf, err := informers.GetInformer(context.Background(), obj)
	if err != nil {
		return nil
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil
	}
	store := shared.GetIndexer()
	if _, exists := store.GetIndexers()[name]; !exists {
		if err := shared.AddIndexers(toolscache.Indexers{name: fn}); err != nil {
			return nil
		}
	}
	return store
}
