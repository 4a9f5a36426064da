// The portal works without this file; it only adds the copy button's behaviour.
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
