// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"fmt"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

const emailIndex = "console-email"

// usersByEmail finds console users by email across every namespace: the informer's own index
// when the cache is an informer cache, a list otherwise (the unit tests' fake client).
type usersByEmail struct {
	store  toolscache.Indexer
	reader client.Reader
}

func newUsersByEmail(r client.Reader) usersByEmail {
	return usersByEmail{reader: r, store: kube.InformerIndexer(r, &paygatev1.ConsoleUser{}, emailIndex, func(o any) ([]string, error) {
		if cu, ok := o.(*paygatev1.ConsoleUser); ok {
			return []string{normalEmail(cu.Spec.Email)}, nil
		}
		return nil, nil
	})}
}

func normalEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// find returns every console user with email (more than one is a conflict the sign-in refuses).
func (u usersByEmail) find(ctx context.Context, email string) ([]*paygatev1.ConsoleUser, error) {
	email = normalEmail(email)
	var out []*paygatev1.ConsoleUser
	if u.store != nil {
		objs, err := u.store.ByIndex(emailIndex, email)
		if err != nil {
			return nil, fmt.Errorf("looking up console users by email: %w", err)
		}
		for _, o := range objs {
			if cu, ok := o.(*paygatev1.ConsoleUser); ok {
				out = append(out, cu.DeepCopy())
			}
		}
		return out, nil
	}
	var list paygatev1.ConsoleUserList
	if err := u.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing console users: %w", err)
	}
	for i := range list.Items {
		if normalEmail(list.Items[i].Spec.Email) == email {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
