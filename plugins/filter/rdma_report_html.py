# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet report as one self-contained HTML page. Documentation: rdma_report_html.yml beside this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils._report_html import ReportError, render_html


def rdma_report_html(report, min_line_rate_pct=None):
    if not isinstance(report, dict) or 'hosts' not in report or 'summary' not in report:
        raise AnsibleFilterError('rdma_report_html: expects the output of rdma_fleet_report')
    if min_line_rate_pct is not None and (isinstance(min_line_rate_pct, bool)
                                          or not isinstance(min_line_rate_pct, (int, float))):
        raise AnsibleFilterError('rdma_report_html: min_line_rate_pct must be a number, got %r' % (min_line_rate_pct,))
    try:
        return render_html(report, min_line_rate_pct)
    except ReportError:
        raise AnsibleFilterError('rdma_report_html: expects the output of rdma_fleet_report')


class FilterModule(object):
    def filters(self):
        return {'rdma_report_html': rdma_report_html}
