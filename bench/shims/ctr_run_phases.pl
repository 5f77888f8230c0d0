#!/usr/bin/perl
# ctr_run_phases.pl: where the time of `ctr run --rm ... /bin/true` goes,
# per shim, from the kernel's exec and exit events. Record them around a
# bench run, e.g.
#
#   perf record -e sched:sched_process_exec -e sched:sched_process_exit -a \
#     -o /tmp/sched.data -- build/release/bench/shims/bench_shims --phases run
#   perf script -i /tmp/sched.data | bench/shims/ctr_run_phases.pl
#
# A run starts at the exec of ctr and ends at its exit. Within it, the shim
# is exec'd three times (start, the server, the `delete` action containerd
# runs after the server exits) and the OCI runtime four times (create, start,
# delete, and delete --force from the delete action). Runs missing any of
# these (ctr run -d, ctr task exec, ...) are skipped. Prints the median of
# each segment per variant (hull/runc, Go/runc, hull/crun), in ms.
use strict;
use warnings;

my @runs;
my $cur;
while (my $line = <STDIN>) {
  my ($ts, $ev, $rest) = $line =~ /\s([\d.]+):\s+sched:(sched_process_\w+):\s+(.*)$/ or next;
  my ($pid) = $rest =~ /\bpid=(\d+)/;
  if ($ev eq 'sched_process_exec') {
    my ($file) = $rest =~ /filename=(\S+)/;
    if ($file =~ m{/ctr$}) {
      $cur = {t0 => $ts, ctr => $pid, shim => [], rt => []};
      push @runs, $cur;
    } elsif (!$cur) {
      next;
    } elsif ($file =~ m{/containerd-shim-(\w+)-v2$}) {
      $cur->{shim_kind} = $1;
      push @{$cur->{shim}}, {pid => $pid, exec => $ts};
    } elsif ($file =~ m{/(runc|crun)$}) {
      $cur->{runtime} = $1;
      push @{$cur->{rt}}, {pid => $pid, exec => $ts};
    } elsif ($file eq '/bin/true') {
      $cur->{true} = {pid => $pid, exec => $ts};
    }
  } elsif ($ev eq 'sched_process_exit' && $cur) {
    if ($pid == $cur->{ctr}) {
      $cur->{t1} //= $ts;
      next;
    }
    for my $p (@{$cur->{shim}}, @{$cur->{rt}}, ($cur->{true} // ())) {
      $p->{exit} //= $ts if $p->{pid} == $pid;
    }
  }
}

my @segments = (
  ['ctr + containerd: container, snapshot, bundle, until shim start', 'ctr', 's0'],
  ['shim start: exec until the server is exec\'d', 's0', 's1'],
  ['server up, Create (rootfs mount, stdio) until runtime create', 's1', 'rc'],
  ['runtime create', 'rc', 'rc_exit'],
  ['Create reply, ctr, Start call until runtime start', 'rc_exit', 'rs'],
  ['runtime start', 'rs', 'rs_exit'],
  ['/bin/true runs and exits', 'rs_exit', 'true_exit'],
  ['exit event, ctr wait, Delete call until runtime delete', 'true_exit', 'rd'],
  ['runtime delete', 'rd', 'rd_exit'],
  ['Delete reply, Shutdown, until the server has exited', 'rd_exit', 's1_exit'],
  ['containerd notices, execs the shim delete action', 's1_exit', 's2'],
  ['shim delete action (incl. runtime delete --force)', 's2', 's2_exit'],
  ['  of which runtime delete --force', 'rf', 'rf_exit'],
  ['containerd removes bundle, ctr removes container, exits', 's2_exit', 'end'],
  ['total', 'ctr', 'end'],
);

my %samples;  # variant -> list of {point => time}
for my $r (@runs) {
  my ($s0, $s1, $s2) = @{$r->{shim}};
  my ($rc, $rs, $rd, $rf) = @{$r->{rt}};
  next unless $s2 && $rf && $r->{true} && defined $r->{t1} && @{$r->{shim}} == 3 && @{$r->{rt}} == 4;
  next unless defined $s1->{exit} && defined $s2->{exit} && defined $rc->{exit} &&
    defined $rs->{exit} && defined $rd->{exit} && defined $rf->{exit} && defined $r->{true}{exit};
  my %t = (ctr => $r->{t0}, s0 => $s0->{exec}, s1 => $s1->{exec}, s1_exit => $s1->{exit},
           s2 => $s2->{exec}, s2_exit => $s2->{exit}, rc => $rc->{exec}, rc_exit => $rc->{exit},
           rs => $rs->{exec}, rs_exit => $rs->{exit}, rd => $rd->{exec}, rd_exit => $rd->{exit},
           rf => $rf->{exec}, rf_exit => $rf->{exit}, true_exit => $r->{true}{exit}, end => $r->{t1});
  my $variant = ($r->{shim_kind} eq 'hull' ? 'hull' : 'Go') . '/' . $r->{runtime};
  push @{$samples{$variant}}, \%t;
}

sub median {
  my @v = sort { $a <=> $b } @_;
  return 'n/a' unless @v;
  my $m = @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
  return sprintf('%.1f', $m);
}

my @variants = grep { $samples{$_} } ('hull/runc', 'Go/runc', 'hull/crun');
print '| segment (median ms) | ', join(' | ', @variants), " |\n";
print '|---|', join('|', map {'---:'} @variants), "|\n";
for my $s (@segments) {
  my ($label, $from, $to) = @$s;
  print "| $label | ",
    join(' | ', map { my $v = $_; median(map { ($_->{$to} - $_->{$from}) * 1000 } @{$samples{$v}}) } @variants),
    " |\n";
}
print '| runs | ', join(' | ', map { scalar @{$samples{$_}} } @variants), " |\n";
