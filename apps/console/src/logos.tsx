// Destination logos drawn here as lettermarks in each brand's colour: bundled, no request to another origin.
const marks: Record<string, { letters: string; bg: string; fg?: string }> = {
  generic: { letters: '{}', bg: '#475569' },
  slack: { letters: 'S', bg: '#4A154B' },
  teams: { letters: 'T', bg: '#5059C9' },
  discord: { letters: 'D', bg: '#5865F2' },
  pagerduty: { letters: 'P', bg: '#06AC38' },
  opsgenie: { letters: 'O', bg: '#2684FF' },
  datadog: { letters: 'DD', bg: '#632CA6' },
  splunk: { letters: 'Sp', bg: '#1a1c20', fg: '#65A637' },
  elastic: { letters: 'E', bg: '#FEC514', fg: '#1a1c20' },
  sumo_logic: { letters: 'Su', bg: '#000099' },
  sentinel: { letters: 'MS', bg: '#0078D4' },
  chronicle: { letters: 'C', bg: '#1A73E8' },
};

export function DestinationLogo({ id, size = 28 }: { id: string | null; size?: number }) {
  const mark = marks[id ?? 'generic'] ?? marks.generic!;
  return (
    <svg width={size} height={size} viewBox="0 0 32 32" aria-hidden="true" focusable="false" className="logo">
      <rect width="32" height="32" rx="7" fill={mark.bg} />
      <text
        x="16"
        y="21"
        textAnchor="middle"
        fontFamily="system-ui, sans-serif"
        fontWeight="700"
        fontSize={mark.letters.length > 1 ? 12 : 16}
        fill={mark.fg ?? '#fff'}
      >
        {mark.letters}
      </text>
    </svg>
  );
}
