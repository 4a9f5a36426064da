// The portal works without this file; it only adds the copy button's behaviour and sends
// each once-only form once.
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const input = document.getElementById(button.dataset.copy);
  const status = button.closest('.field')?.querySelector('.copy-status');
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
    if (status) status.textContent = 'Copied to the clipboard.';
  } catch {
    // No clipboard access (an insecure origin, a denied permission): the text stays selected.
    if (status) status.textContent = 'Selected: press Ctrl+C (⌘C on a Mac) to copy.';
  }
});

// A form that acts once (it carries its idempotency key) is sent once: the answer to a second
// send never holds a new secret (it says the key was made already), and a browser shows the
// answer to its last send.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!form.querySelector('input[name="idempotency_key"]')) return;
  if (form.dataset.sent === 'true') {
    event.preventDefault();
    return;
  }
  form.dataset.sent = 'true';
});
