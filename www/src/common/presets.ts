// Provider presets of the benchmark page: which wire format each speaks, its base URL, a
// model to start from, and whether a key is needed. The origins here are also the page's
// Content-Security-Policy `connect-src` list (see csp.ts): the page talks to nothing else
// unless the user adds an origin.

import type { Api } from 'tpsmeter';

export interface Preset {
  id: string;
  label: string;
  api: Api;
  url: string;
  model: string;
  /** The provider asks for a key (local servers usually do not). */
  key: boolean;
  /** Shown under the form: what this provider needs from a browser page. */
  note?: string;
}

/** The id of the preset that runs the in-browser engine. */
export const LOCAL_PRESET = 'local';
/** The id of the preset that targets the server the page came from (`tpsmeter serve --www`). */
export const SAME_ORIGIN_PRESET = 'this-server';
export const CUSTOM_PRESET = 'custom';

export const PRESETS: Preset[] = [
  { id: SAME_ORIGIN_PRESET, label: 'This server (tpsmeter serve)', api: 'openai-chat', url: '', model: '', key: false, note: 'The OpenAI-compatible server this page was loaded from.' },
  { id: LOCAL_PRESET, label: "This browser's GPU or CPU (local engine)", api: 'local', url: 'local:engine', model: '', key: false, note: 'Loads the model chosen on the demo page into a Worker here (WebGPU on a GPU, the CPU otherwise) and measures it like an API.' },
  { id: 'openai', label: 'OpenAI', api: 'openai-chat', url: 'https://api.openai.com', model: 'gpt-4o-mini', key: true },
  { id: 'anthropic', label: 'Anthropic', api: 'anthropic', url: 'https://api.anthropic.com', model: 'claude-haiku-4-5', key: true, note: 'Sent with anthropic-dangerous-direct-browser-access: true, which Anthropic requires from pages.' },
  { id: 'gemini', label: 'Google Gemini', api: 'gemini', url: 'https://generativelanguage.googleapis.com', model: 'gemini-2.5-flash', key: true },
  { id: 'openrouter', label: 'OpenRouter', api: 'openai-chat', url: 'https://openrouter.ai/api', model: 'openai/gpt-4o-mini', key: true },
  { id: 'groq', label: 'Groq', api: 'openai-chat', url: 'https://api.groq.com/openai', model: 'llama-3.1-8b-instant', key: true },
  { id: 'together', label: 'Together AI', api: 'openai-chat', url: 'https://api.together.xyz', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', key: true },
  { id: 'fireworks', label: 'Fireworks AI', api: 'openai-chat', url: 'https://api.fireworks.ai/inference', model: 'accounts/fireworks/models/llama-v3p1-8b-instruct', key: true },
  { id: 'mistral', label: 'Mistral', api: 'openai-chat', url: 'https://api.mistral.ai', model: 'mistral-small-latest', key: true },
  { id: 'deepseek', label: 'DeepSeek', api: 'openai-chat', url: 'https://api.deepseek.com', model: 'deepseek-chat', key: true },
  { id: 'ollama', label: 'Ollama (local)', api: 'ollama-chat', url: 'http://localhost:11434', model: 'llama3.2', key: false, note: 'Start Ollama with OLLAMA_ORIGINS set to this page\'s origin so it answers CORS.' },
  { id: 'llamacpp', label: 'llama.cpp server (local)', api: 'openai-chat', url: 'http://localhost:8080', model: 'default', key: false },
  { id: 'vllm', label: 'vLLM (local)', api: 'openai-chat', url: 'http://localhost:8000', model: 'default', key: false, note: 'Start vLLM with --allowed-origins so it answers CORS.' },
  { id: 'lmstudio', label: 'LM Studio (local)', api: 'openai-chat', url: 'http://localhost:1234', model: 'default', key: false, note: 'Turn on "Enable CORS" in LM Studio\'s server settings.' },
  { id: CUSTOM_PRESET, label: 'Any OpenAI-compatible URL', api: 'openai-chat', url: '', model: '', key: false },
];

export function preset(id: string): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}

/** Origins of the remote presets (https), for `connect-src`. */
export function presetOrigins(): string[] {
  const out = new Set<string>();
  for (const p of PRESETS) {
    if (p.url.startsWith('https://')) out.add(new URL(p.url).origin);
  }
  return [...out];
}

/** A prompt of the built-in set: each stresses another part of the speed people see. */
export interface SetPrompt {
  id: string;
  label: string;
  text: string;
}

export const PROMPT_SET: SetPrompt[] = [
  { id: 'chat', label: 'Short question, short answer (TTFT dominates)', text: 'What is the capital of France? Answer in one sentence.' },
  { id: 'story', label: 'Short story (a typical chat answer)', text: 'Write a short story about a lighthouse keeper who finds a message in a bottle.' },
  { id: 'essay', label: 'Long essay (decode speed dominates)', text: 'Write a detailed essay about the history of lighthouses and the people who kept them.' },
  { id: 'code', label: 'Code with explanations', text: 'Write a Python function that reads a CSV file and returns the mean of every numeric column. Explain each step in comments.' },
  {
    id: 'summary',
    label: 'Summarise a passage (longer input)',
    text:
      'Summarise the following passage in three sentences.\n\n' +
      'Lighthouses were built along dangerous coasts to guide ships safely into harbour. Early towers burned wood or coal in open fires, which were hard to see in rain and fog. ' +
      'In the eighteenth century oil lamps with reflectors made the light far brighter, and in 1822 Augustin Fresnel designed a lens of concentric glass rings that focused the light into a beam visible for more than twenty miles. ' +
      'Each lighthouse was given its own pattern of flashes so that sailors could tell one from another at night. Keepers lived at the stations with their families, trimming wicks, winding the clockwork that turned the lens, and keeping logs of the weather and passing ships. ' +
      'Storms could cut a station off for weeks, and keepers were known for rescues of shipwrecked crews. During the twentieth century electric lamps and automatic controls replaced most keepers, and satellite navigation later made many lights less essential, ' +
      'yet hundreds still operate, and many old towers have become museums that tell the story of the people who kept them.',
  },
];
