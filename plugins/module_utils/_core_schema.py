# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Built-in Kubernetes objects (DaemonSets, Jobs, Pods) checked against the upstream OpenAPI schemas.

The schemas come from the kubernetes-validate package, one set per Kubernetes minor release; strict mode
reports fields the API does not declare, as the CRD check does for custom resources.
"""

from __future__ import annotations

try:
    import kubernetes_validate
except ImportError:  # pragma: no cover - reported by require_kubernetes_validate
    kubernetes_validate = None


class CoreSchemaError(Exception):
    """The schemas cannot be used (package missing, unknown Kubernetes release)."""


def is_builtin(api_version):
    """True for the API groups Kubernetes itself serves: ``v1``, ``apps/v1``, ``batch/v1``, ``*.k8s.io/...``."""
    group = (api_version or '').rpartition('/')[0]
    return group == '' or '.' not in group or group.endswith('.k8s.io')


def require_kubernetes_validate():
    if kubernetes_validate is None:
        raise CoreSchemaError('the kubernetes-validate Python package is needed on the controller to check built-in '
                              'objects (pip install kubernetes-validate)')
    return kubernetes_validate


def validate_builtin(obj, kubernetes_version):
    """Every problem of one built-in object against the schemas of ``kubernetes_version`` (e.g. ``1.33``)."""
    validator = require_kubernetes_validate()
    supported = sorted(set('.'.join(v.split('.')[:2]) for v in validator.utils.all_versions()),
                       key=lambda v: tuple(int(part) for part in v.split('.')))
    if '.'.join(str(kubernetes_version).lstrip('v').split('.')[:2]) not in supported:
        raise CoreSchemaError('no schemas for Kubernetes %s in kubernetes-validate %s (it has %s to %s)' % (
            kubernetes_version, validator.__version__, supported[0], supported[-1]))
    try:
        validator.validate(obj, kubernetes_version, strict=True)
    except validator.SchemaNotFoundError as exc:
        return ['no schema for %s %s in Kubernetes %s: %s'
                % (obj.get('apiVersion'), obj.get('kind'), kubernetes_version, exc)]
    except validator.InvalidSchemaError as exc:
        raise CoreSchemaError('the schemas of Kubernetes %s cannot be used: %s' % (kubernetes_version, exc))
    except validator.ValidationError as exc:
        where = '.'.join(str(part) for part in exc.path)
        return ['%s: %s' % (where or '(root)', exc.message)]
    return []
