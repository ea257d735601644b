# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet report as one self-contained HTML page. Documentation: report_html.yml beside this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.report import check_report
from ansible_collections.gpunet.rdma.plugins.plugin_utils._report_html import ReportError, render_html
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import a_number, filter_args

NAME = 'report_html'


@filter_args(NAME, min_line_rate_pct=a_number('the share of the line rate a bandwidth test passes at, in %',
                                              nullable=True))
def rdma_report_html(report, min_line_rate_pct=None):
    check_report(NAME, report)
    threshold = None
    if min_line_rate_pct not in (None, ''):
        # extra vars arrive as strings: '85' is 85, not "no threshold given"
        threshold = float(min_line_rate_pct)
        if not 1 <= threshold <= 100:
            raise AnsibleFilterError('%s: min_line_rate_pct must be a percentage between 1 and 100, got %s'
                                     % (NAME, min_line_rate_pct))
    try:
        return render_html(report, threshold)
    except ReportError as exc:
        raise AnsibleFilterError('%s: %s' % (NAME, exc))


class FilterModule(object):
    def filters(self):
        return {'report_html': rdma_report_html}
